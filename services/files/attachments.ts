import type { EventMetadata } from '../../contracts/envelope';
import type { EntityWrite } from '../entities/entity.handlers';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand, loadAggregate } from '../shared/decider';
import { badRequest } from '../shared/errors';
import { fileKeyOfUrl } from './fileUrl';
import { fileStream, storedFileDecider } from './storedFile.decider';

/**
 * An attachment whose `url` names a stored file (`/api/files/<key>`, as the upload answers, or the
 * bare key) takes that file over: the file must be an upload of the attachment's project that no
 * attachment holds yet (else 404 file-not-found, 400 file-in-use, before anything is written), and
 * `FileAttached` records it; from then on the file is read with the attachment and deleted after
 * it (the file sweep). Any other url is a link to an http(s) address (fileUrl.ts; the entity rules
 * refuse the rest) and stays as it is. The file of an attachment is set when it is created.
 */

interface Commands {
  create(deps: CommandDeps, write: EntityWrite, metadata: EventMetadata): Promise<number>;
  update(deps: CommandDeps, id: number, write: EntityWrite, metadata: EventMetadata): Promise<number>;
  delete(deps: CommandDeps, id: number, metadata: EventMetadata): Promise<number>;
}

/** The attachment commands, with files taken over on create. */
export function withAttachedFiles<C extends Commands>(commands: C): C {
  return {
    ...commands,
    async create(deps, write, metadata) {
      const key = fileKeyOfUrl(write.data.url);
      const projectId = write.connect.project;
      if (key === null || typeof projectId !== 'number') return commands.create(deps, write, metadata);
      // Checked before the attachment exists: a file that cannot be attached leaves nothing behind.
      const { state } = await loadAggregate(deps.store, fileStream(key), storedFileDecider);
      storedFileDecider.decide({ type: 'Attach', key, projectId, attachmentId: Number.MAX_SAFE_INTEGER, now: deps.clock().toISOString() }, state);
      const id = await commands.create(deps, write, metadata);
      try {
        const outcome = await handleCommand(deps.store, fileStream(key), storedFileDecider, { type: 'Attach', key, projectId, attachmentId: id, now: deps.clock().toISOString() }, metadata);
        await readYourWrites(deps, outcome);
      } catch (error) {
        // Another attachment took the file (or it was deleted) meanwhile: this one is not kept.
        await commands.delete(deps, id, metadata);
        throw error;
      }
      return id;
    },
    async update(deps, id, write, metadata) {
      if (write.data.url !== undefined) {
        const held = await deps.knex('stored_files').where({ attachment_id: id }).whereNull('deleted_at').first('key');
        if (held || fileKeyOfUrl(write.data.url) !== null)
          throw badRequest('attachment-file-fixed', 'The file of an attachment is set when it is created: create another attachment for another file', { path: 'data.url' });
      }
      return commands.update(deps, id, write, metadata);
    },
  };
}
