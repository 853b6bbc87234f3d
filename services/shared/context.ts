import type { EventMetadata } from '../../contracts/envelope';
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

export function metadataFor(auth: RequestAuth, request: { correlationId: string; ip?: string }): EventMetadata {
  return {
    actor: { userId: auth.user.id, ...(auth.tokenId !== undefined && { tokenId: auth.tokenId }), via: auth.via },
    ...(request.ip && { ip: request.ip }),
    correlationId: request.correlationId,
    causationId: null,
  };
}

export function systemMetadata(correlationId: string): EventMetadata {
  return { actor: { userId: null, via: 'system' }, correlationId, causationId: null };
}
