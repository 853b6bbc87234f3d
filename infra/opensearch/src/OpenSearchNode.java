import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * A single OpenSearch 2.19 node for development and CI, run from the Maven Central jars (no
 * distribution, no Docker): what infra/opensearch/up.sh starts.
 *
 *   java -cp 'lib/*:classes' OpenSearchNode HOME HOST HTTP_PORT TRANSPORT_PORT [key=value ...]
 *
 * HOME gets config/ (log4j2.properties, copied there by up.sh), data/, logs/ and empty modules/ and
 * plugins/ directories. The plugins are loaded as classpath plugins, so no plugin directory is
 * scanned, no jar-hell check runs, and, as Bootstrap is not used, no security manager is installed
 * and no bootstrap check (vm.max_map_count, file descriptors) runs. Extra arguments key=value are
 * node settings. SIGTERM closes the node (flushes the indices) and exits.
 */
public final class OpenSearchNode {

  /** Classpath plugins: the first three are required, the others are loaded when their jar is there. */
  private static final List<String> REQUIRED_PLUGINS = List.of(
      "org.opensearch.transport.Netty4Plugin",
      "org.opensearch.analysis.common.CommonAnalysisPlugin",
      "org.opensearch.painless.PainlessPlugin");
  private static final List<String> OPTIONAL_PLUGINS = List.of(
      "org.opensearch.index.reindex.ReindexPlugin",
      "org.opensearch.index.mapper.MapperExtrasPlugin");

  /** Node's constructor taking classpath plugins is protected; the node and cluster id listener needs a distribution's logging setup, so it is left out. */
  static final class ClasspathNode extends Node {
    ClasspathNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
      super(environment, plugins, true);
    }

    @Override
    protected void configureNodeAndClusterIdStateListener(ClusterService clusterService) {
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 4) {
      System.err.println("usage: OpenSearchNode HOME HOST HTTP_PORT TRANSPORT_PORT [key=value ...]");
      System.exit(2);
    }
    Path home = Paths.get(args[0]).toAbsolutePath();
    String nodeName = "testament-0";
    for (String dir : List.of("config", "data", "logs", "modules", "plugins")) {
      Files.createDirectories(home.resolve(dir));
    }
    Settings.Builder settings = Settings.builder()
        .put("path.home", home.toString())
        .put("path.data", home.resolve("data").toString())
        .put("path.logs", home.resolve("logs").toString())
        .put("cluster.name", "testament")
        .put("node.name", nodeName)
        .put("discovery.type", "single-node")
        .put("network.host", args[1])
        .put("http.port", args[2])
        .put("transport.port", args[3])
        // Development and CI disks may be nearly full: never turn indices read-only for that.
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
        .put("action.auto_create_index", true);
    for (int i = 4; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      if (eq <= 0) {
        System.err.println("not a key=value setting: " + args[i]);
        System.exit(2);
      }
      settings.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Environment environment = InternalSettingsPreparer.prepareEnvironment(
        settings.build(), Collections.emptyMap(), home.resolve("config"), () -> nodeName);

    LogConfigurator.registerErrorListener();
    LogConfigurator.setNodeName(nodeName);
    LogConfigurator.configure(environment);

    List<Class<? extends Plugin>> plugins = new ArrayList<>();
    for (String name : REQUIRED_PLUGINS) {
      plugins.add(Class.forName(name).asSubclass(Plugin.class));
    }
    for (String name : OPTIONAL_PLUGINS) {
      try {
        plugins.add(Class.forName(name).asSubclass(Plugin.class));
      } catch (ClassNotFoundException e) {
        System.err.println("optional plugin not on the classpath: " + name);
      }
    }

    Node node;
    try {
      node = new ClasspathNode(environment, plugins);
    } catch (Throwable t) {
      System.err.println("the node could not be created:");
      t.printStackTrace();
      System.exit(1);
      return;
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        node.close();
        if (!node.awaitClose(20, TimeUnit.SECONDS)) {
          System.err.println("the node did not close within 20 s");
        }
      } catch (Exception e) {
        e.printStackTrace();
      } finally {
        // log4j's own shutdown hook is disabled (-Dlog4j.shutdownHookEnabled=false) so that the
        // node's close is logged: stop it last.
        Configurator.shutdown((LoggerContext) LogManager.getContext(false));
      }
    }, "opensearch-node-close"));
    try {
      node.start();
    } catch (Throwable t) {
      System.err.println("the node did not start:");
      t.printStackTrace();
      System.exit(1);
    }
    System.out.println("node " + nodeName + " started: http " + args[1] + ":" + args[2]);
    // The node's threads are daemons here and there: keep the JVM alive until a signal.
    Thread.currentThread().join();
  }
}
