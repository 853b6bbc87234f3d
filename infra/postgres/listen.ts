import pg from 'pg';

/**
 * A connection of its own that LISTENs on `channel`: `onNotification` gets each payload, `onLost`
 * is told once the connection is lost (the caller replaces it). Rejects, with the connection
 * ended, when it cannot be set up.
 */
export async function listenOn(
  connectionString: string, channel: string, handlers: { onNotification(payload: string): void; onLost(client: pg.Client): void },
): Promise<pg.Client> {
  const client = new pg.Client({ connectionString });
  client.on('notification', (msg) => handlers.onNotification(msg.payload ?? ''));
  client.on('error', () => handlers.onLost(client));
  try {
    await client.connect();
    await client.query(`LISTEN ${channel}`);
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return client;
}
