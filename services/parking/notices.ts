import type { Logger } from 'pino';
import type { CommandDeps } from '../shared/commandBus';
import { systemMetadata } from '../shared/context';
import { describeError, isTransient } from '../shared/faults';
import { notify, planNotificationId } from '../notifications/notify';
import { Pauses } from '../shared/pauses';
import { PARKED_EVENTS_PATH } from './parkedEvents.routes';

/** Parked events told of in one notice at most (the rest: the next round). */
const NOTICE_ROWS = 1000;
/** A round also runs this often without being woken (events parked by another process, a notice a crash left unsent). */
const ROUND_EVERY_MS = 60_000;

export interface ParkingNotices {
  /** Something was parked: a round runs soon. */
  wake(): void;
  stop(): Promise<void>;
}

interface Parked { id: string; projection: string; kind: string; position: string | null; event_type: string | null; stream_id: string | null; error: string }

/**
 * Tells every active administrator of the events the projections parked (a notification each,
 * GET /api/notifications, linking to GET /api/admin/parked-events): the events at fault and the
 * messages that were not events, not each event held behind them. A round takes the parked
 * events nobody was told of yet, plans one notification id per administrator and records that
 * plan in `parking_notices` with the events (one transaction); then it sends what was planned
 * and not sent (the ids planned make a repeat after a crash a no-op). So each parking is told
 * once, even with several processes or a crash between two sends.
 */
export function startParkingNotices(deps: Pick<CommandDeps, 'knex' | 'store' | 'ids' | 'clock'>, logger: Logger): ParkingNotices {
  const pauses = new Pauses();
  let stopping = false;
  let woken = false;

  async function plan(): Promise<boolean> {
    return deps.knex.transaction(async (trx) => {
      const rows: Parked[] = await trx('parked_events').whereNull('notice_id').orderBy('id').limit(NOTICE_ROWS).forUpdate().skipLocked()
        .select('id', 'projection', 'kind', 'position', 'event_type', 'stream_id', 'error');
      if (rows.length === 0) return false;
      const admins: { id: number }[] = await trx('users').where({ access: 'ADMIN', is_active: true, is_deleted: false }).orderBy('id').select('id');
      const metadata = systemMetadata('parking-notices');
      const planned: Record<string, number> = {};
      for (const admin of admins) planned[admin.id] = await planNotificationId(deps, metadata);
      const byProjection: Record<string, number> = {};
      for (const r of rows) byProjection[r.projection] = (byProjection[r.projection] ?? 0) + 1;
      const first = rows[0];
      const summary = { events: rows.length, byProjection, first: { id: Number(first.id), projection: first.projection, position: first.position, eventType: first.event_type, streamId: first.stream_id, error: first.error.slice(0, 500) } };
      const [{ id }] = await trx('parking_notices').insert({ summary, planned }).returning('id');
      await trx('parked_events').whereIn('id', rows.map((r) => r.id)).update({ notice_id: id });
      return true;
    });
  }

  async function send(): Promise<void> {
    const notices: { id: string; summary: { events: number; byProjection: Record<string, number>; first: { projection: string; position: string | null; eventType: string | null; streamId: string | null; error: string } }; planned: Record<string, number> }[] =
      await deps.knex('parking_notices').whereNull('sent_at').orderBy('id').select('id', 'summary', 'planned');
    for (const notice of notices) {
      const { events, byProjection, first } = notice.summary;
      const where = Object.entries(byProjection).map(([p, n]) => `${n} in ${p}`).join(', ');
      for (const [userId, notificationId] of Object.entries(notice.planned)) {
        await notify(deps, {
          userId: Number(userId), notificationId, kind: 'events-parked',
          title: `${events} event${events === 1 ? '' : 's'} could not be applied and ${events === 1 ? 'was' : 'were'} parked`.slice(0, 200),
          body: (`Parked: ${where}. The service goes on; what these events changed is recorded in the log but not shown by those projections until `
            + `an administrator retries them (after a fix). First: ${first.eventType ?? 'a message'} at position ${first.position ?? '?'} of ${first.streamId ?? '?'} `
            + `in ${first.projection}: ${first.error}`).slice(0, 2000),
          link: PARKED_EVENTS_PATH, subject: null,
        }, systemMetadata(`parking-notice-${notice.id}`));
      }
      await deps.knex('parking_notices').where({ id: notice.id }).update({ sent_at: deps.knex.fn.now() });
    }
  }

  async function round(): Promise<void> {
    while (!stopping && (await plan()));
    if (!stopping) await send();
  }

  const loop = (async () => {
    while (!stopping) {
      woken = false;
      try {
        await round();
      } catch (err) {
        // Told again on the next round: nothing is marked told that was not.
        (isTransient(err) ? logger.warn : logger.error).call(logger, { err, error: describeError(err) }, 'cannot tell administrators of parked events yet');
      }
      if (!woken) await pauses.sleep(ROUND_EVERY_MS);
    }
  })();

  return {
    wake() {
      woken = true;
      pauses.wakeAll();
    },
    async stop() {
      stopping = true;
      pauses.close();
      await loop;
    },
  };
}
