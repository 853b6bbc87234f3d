import { createHash } from 'node:crypto';
import type { ActorVia, EventMetadata } from '../../contracts/envelope';
import type { AccessLevel } from '../../contracts/events';

/** Who is calling: set by authentication, carried into every command's event metadata. */
export interface AuthenticatedUser {
  id: number;
  email: string;
  name: string;
  access: AccessLevel;
}

export interface RequestAuth {
  user: AuthenticatedUser;
  tokenId?: number;
  via: 'api' | 'session';
}

/** What metadataFor reads from a request (an express Request has all of it). */
export interface RequestFacts {
  correlationId: string;
  /** express's req.ip: the peer, or the client named by X-Forwarded-For when TRUST_PROXY is set. */
  ip?: string;
  headers?: { 'user-agent'?: string };
  /** express-session's id of the session the request carries. */
  sessionID?: string;
}

/** The command-line client sends `User-Agent: testament-cli/<version>`. */
const CLI_USER_AGENT = /^testament-cli\//;

/** How the caller came in: a bearer token used by the CLI is `cli`, by anything else `api`. */
export function actorVia(auth: RequestAuth, request: RequestFacts): ActorVia {
  if (auth.via === 'api' && CLI_USER_AGENT.test(request.headers?.['user-agent'] ?? '')) return 'cli';
  return auth.via;
}

/** A session named without being usable: the first 16 hex digits of SHA-256 of its id. */
export function sessionRefOf(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 16);
}

export function metadataFor(auth: RequestAuth, request: RequestFacts): EventMetadata {
  const sessionRef = auth.via === 'session' && request.sessionID ? sessionRefOf(request.sessionID) : undefined;
  return {
    actor: {
      userId: auth.user.id,
      ...(auth.tokenId !== undefined && { tokenId: auth.tokenId }),
      ...(sessionRef !== undefined && { sessionRef }),
      via: actorVia(auth, request),
    },
    ...(request.ip && { ip: request.ip }),
    correlationId: request.correlationId,
    causationId: null,
  };
}

export function systemMetadata(correlationId: string): EventMetadata {
  return { actor: { userId: null, via: 'system' }, correlationId, causationId: null };
}
