import { importingAdmin } from '../../imports/importClient';
import type { TestApp } from '../../support/app';

/** A JUnit file: one pass, one failure (with a stack trace), one error, one skip. */
export const JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="com.acme.CheckoutTest" tests="4" failures="1" errors="1" skipped="1" time="3.5" timestamp="2026-03-01T10:15:30">
    <testcase classname="com.acme.CheckoutTest" name="pays by card" time="1.25"/>
    <testcase classname="com.acme.CheckoutTest" name="refuses an expired card" time="0.5">
      <failure message="expected 402 but was 200&#10;second line" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected 402 but was 200
	at com.acme.CheckoutTest.refusesAnExpiredCard(CheckoutTest.java:42)</failure>
    </testcase>
    <testcase classname="com.acme.CheckoutTest" name="computes the tax" time="0.75">
      <error type="java.lang.NullPointerException">java.lang.NullPointerException: Cannot invoke "Tax.rate()"
	at com.acme.Tax.compute(Tax.java:7)</error>
    </testcase>
    <testcase classname="com.acme.CheckoutTest" name="ships abroad" time="0">
      <skipped message="not on CI"/>
    </testcase>
  </testsuite>
</testsuites>`;

export type World = Awaited<ReturnType<typeof buildWorld>>;

/**
 * A project with one of everything the indexer reads, written through the model API (the real
 * command path): folders A / B, a case with steps, tags, a custom field value, a template and a
 * state; a run, a session, a milestone, comments, and a JUnit import with failures.
 */
export async function buildWorld(app: TestApp, projectName = 'Payments') {
  const { model, projectId, upload } = await importingAdmin(app, projectName);
  const ids: Record<string, number> = { project: projectId };
  const connect = (id: number) => ({ connect: { id } });
  ids.smoke = (await model('tag', 'create', { data: { name: 'smoke' } })).id;
  ids.checkout = (await model('tag', 'create', { data: { name: 'checkout' } })).id;
  ids.folderA = (await model('repositoryFolder', 'create', { data: { name: 'Web', project: connect(projectId) } })).id;
  ids.folderB = (await model('repositoryFolder', 'create', { data: { name: 'Cart', project: connect(projectId), parent: connect(ids.folderA) } })).id;
  ids.priority = (await model('caseField', 'create', { data: { displayName: 'Priority', systemName: 'priority', type: 'TEXT_STRING' } })).id;
  ids.template = (await model('template', 'findFirst', { where: { name: 'Default' } })).id;
  ids.caseState = (await model('workflow', 'findFirst', { where: { scope: 'CASES', name: 'Draft' } })).id;
  ids.runState = (await model('workflow', 'findFirst', { where: { scope: 'RUNS', name: 'New' } })).id;
  ids.sessionState = (await model('workflow', 'findFirst', { where: { scope: 'SESSIONS', name: 'In Progress' } })).id;
  ids.config = (await model('configuration', 'create', { data: { name: 'Chrome on Linux' } })).id;
  ids.case = (await model('repositoryCase', 'create', {
    data: {
      title: 'Pay with a saved card', description: 'The shopper pays with a card kept on file', project: connect(projectId), folder: connect(ids.folderB),
      template: connect(ids.template), state: connect(ids.caseState), tags: { connect: [{ id: ids.smoke }, { id: ids.checkout }] },
      steps: { create: [{ step: 'Open the basket', expectedResult: 'The basket shows', order: 1 }, { step: 'Choose the saved card', expectedResult: 'The payment succeeds', order: 2 }] },
      fieldValues: { create: [{ field: connect(ids.priority), value: 'High' }] },
    },
  })).id;
  ids.run = (await model('testRun', 'create', {
    data: { name: 'Release 2.4 regression', note: 'Before the release', branch: 'release/2.4', project: connect(projectId), configuration: connect(ids.config), state: connect(ids.runState), tags: { connect: [{ id: ids.smoke }] } },
  })).id;
  ids.session = (await model('session', 'create', {
    data: { name: 'Explore refunds', note: 'An hour', mission: 'Find ways to refund twice', project: connect(projectId), template: connect(ids.template), state: connect(ids.sessionState), configuration: connect(ids.config), tags: { connect: [{ id: ids.checkout }] } },
  })).id;
  ids.milestone = (await model('milestone', 'create', { data: { name: 'Release 2.4', note: 'Spring release', project: connect(projectId) } })).id;
  ids.caseComment = (await model('comment', 'create', { data: { content: 'Flaky on Safari', project: connect(projectId), repositoryCase: connect(ids.case) } })).id;
  ids.projectComment = (await model('comment', 'create', { data: { content: 'Kick-off notes', project: connect(projectId) } })).id;
  return { model, upload, ids, connect };
}
