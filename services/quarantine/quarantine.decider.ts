import type { CaseQuarantined, CaseReleased } from '../../contracts/events';
import type { Decider } from '../shared/decider';
import { DomainError } from '../shared/errors';

/**
 * A repository case's quarantine, an aggregate of its own on `caseQuarantine-<caseId>`: a case is
 * quarantined (its results stay recorded and visible; run comparisons report it apart from the
 * failures) and released again, each time with a reason; who is the event's actor.
 */

export type QuarantineEvent = CaseQuarantined | CaseReleased;
export type QuarantineCommand =
  | { type: 'Quarantine'; caseId: number; projectId: number; reason: string; now: string }
  | { type: 'Release'; caseId: number; projectId: number; reason: string; now: string };
export interface QuarantineState { quarantined: boolean }

export const quarantineStream = (caseId: number) => `caseQuarantine-${caseId}`;

export const quarantineDecider: Decider<QuarantineCommand, QuarantineEvent, QuarantineState> = {
  initialState: { quarantined: false },
  evolve: (_state, event) => ({ quarantined: event.type === 'CaseQuarantined' }),
  decide(cmd, state) {
    const data = { caseId: cmd.caseId, projectId: cmd.projectId, reason: cmd.reason, at: cmd.now };
    if (cmd.type === 'Quarantine') {
      if (state.quarantined) throw new DomainError('case-quarantined', `Case ${cmd.caseId} is quarantined already`, { caseId: cmd.caseId });
      return [{ type: 'CaseQuarantined', data }];
    }
    if (!state.quarantined) throw new DomainError('case-not-quarantined', `Case ${cmd.caseId} is not quarantined`, { caseId: cmd.caseId });
    return [{ type: 'CaseReleased', data }];
  },
};
