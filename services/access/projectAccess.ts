import type { Knex } from 'knex';
import { APPLICATION_AREAS } from '../../contracts/entities';
import type { AuthenticatedUser } from '../shared/context';

/**
 * What a caller may do in each project: the one answer every policy decision starts from (model
 * API, audit, import, lookup, search, exports).
 *
 * Resolution, per project, first match wins (TestPlanIt's order, docs/access.md):
 *   1. administrators (access ADMIN): everything, everywhere;
 *   2. the project's creator: project admin;
 *   3. a user permission with the role "Project Admin": project admin;
 *   4. a user permission NO_ACCESS: shut out (whatever the groups or assignment say);
 *   5. a user permission GLOBAL_ROLE (the user's own role) or SPECIFIC_ROLE (the role named);
 *   6. group permissions of the user's groups: the union of the roles they grant; if none grants
 *      and one says NO_ACCESS: shut out;
 *   7. a direct assignment: the project's default (GLOBAL_ROLE or DEFAULT: the user's role;
 *      SPECIFIC_ROLE: the project's default role; NO_ACCESS: shut out);
 *   8. otherwise no access.
 * DEFAULT on a user or group permission falls through to the next rule. The user's role is their
 * global role, else the role marked default. Access level NONE sees nothing; PROJECTADMIN is
 * project admin of every project they reach. Deleted roles grant nothing.
 */
export type Area = (typeof APPLICATION_AREAS)[number];

export interface Permission {
  readonly canAddEdit: boolean;
  readonly canDelete: boolean;
  readonly canClose: boolean;
}

export interface ProjectGrant {
  /** Manages the project: every permission in it, its members and settings, its audit trail. */
  readonly projectAdmin: boolean;
  /** Per area, from the granting role(s); an area not listed grants nothing (read only). */
  readonly permissions: ReadonlyMap<Area, Permission>;
  /** The roles that grant it (none for a project admin by creation or access level, nor for administrators). */
  readonly roleIds: readonly number[];
}

export interface ProjectAccess {
  /** Administrators: every project, every permission. */
  readonly all: boolean;
  /** The projects the caller can see, with what they may do in each. */
  readonly projects: ReadonlyMap<number, ProjectGrant>;
}

export const PROJECT_ADMIN_ROLE = 'Project Admin';

const NONE: Permission = { canAddEdit: false, canDelete: false, canClose: false };

/** May the grant do this in the area? Project admins may do everything. */
export function permits(grant: ProjectGrant, area: Area, action: keyof Permission): boolean {
  return grant.projectAdmin || (grant.permissions.get(area) ?? NONE)[action];
}

interface Candidate {
  project_id: number;
  created_by_id: number | null;
  default_access_type: string;
  default_role_id: number | null;
  user_access_type: string | null;
  user_role_id: number | null;
  group_grants: { accessType: string; roleId: number | null }[] | null;
  assigned: boolean;
}

/**
 * Every project the user could reach by any rule, with what each rule says, in one statement:
 * created by them, a user permission, a group permission of one of their groups, an assignment.
 */
const CANDIDATES_SQL = `
WITH my_groups AS (
  SELECT ga.group_id FROM group_assignments ga JOIN groups g ON g.id = ga.group_id AND NOT g.is_deleted WHERE ga.user_id = :userId
), reach AS (
  SELECT id AS project_id FROM projects WHERE created_by_id = :userId
  UNION SELECT project_id FROM user_project_permissions WHERE user_id = :userId
  UNION SELECT project_id FROM group_project_permissions WHERE group_id IN (SELECT group_id FROM my_groups)
  UNION SELECT project_id FROM project_assignments WHERE user_id = :userId
)
SELECT p.id AS project_id, p.created_by_id, p.default_access_type, p.default_role_id,
       upp.access_type AS user_access_type, upp.role_id AS user_role_id,
       (SELECT json_agg(json_build_object('accessType', gpp.access_type, 'roleId', gpp.role_id))
          FROM group_project_permissions gpp WHERE gpp.project_id = p.id AND gpp.group_id IN (SELECT group_id FROM my_groups)) AS group_grants,
       EXISTS (SELECT 1 FROM project_assignments pa WHERE pa.project_id = p.id AND pa.user_id = :userId) AS assigned
  FROM reach JOIN projects p ON p.id = reach.project_id AND NOT p.is_deleted
  LEFT JOIN user_project_permissions upp ON upp.project_id = p.id AND upp.user_id = :userId`;

/** The caller's access to every project. Administrators cost no query; others two. */
export async function resolveProjectAccess(knex: Knex, user: AuthenticatedUser): Promise<ProjectAccess> {
  if (user.access === 'ADMIN') return { all: true, projects: new Map() };
  if (user.access === 'NONE') return { all: false, projects: new Map() };
  const candidates = (await knex.raw(CANDIDATES_SQL, { userId: user.id })).rows as Candidate[];
  if (candidates.length === 0) return { all: false, projects: new Map() };

  const roleIds = new Set<number>();
  for (const c of candidates) {
    for (const id of [c.default_role_id, c.user_role_id, ...(c.group_grants ?? []).map((g) => g.roleId)]) if (id !== null) roleIds.add(id);
  }
  const roles = await loadRoles(knex, user.id, [...roleIds]);

  const projects = new Map<number, ProjectGrant>();
  for (const c of candidates) {
    const grant = resolveProject(c, user, roles);
    if (grant) projects.set(c.project_id, user.access === 'PROJECTADMIN' ? { ...grant, projectAdmin: true } : grant);
  }
  return { all: false, projects };
}

interface Roles {
  /** The user's own role: their global role, else the default role; null if neither exists. */
  own: number | null;
  byId: Map<number, { name: string; permissions: Map<Area, Permission> }>;
}

async function loadRoles(knex: Knex, userId: number, ids: number[]): Promise<Roles> {
  const { rows: [own] } = await knex.raw(
    `SELECT COALESCE((SELECT r.id FROM users u JOIN roles r ON r.id = u.role_id AND NOT r.is_deleted WHERE u.id = ?),
                     (SELECT id FROM roles WHERE is_default AND NOT is_deleted ORDER BY id LIMIT 1)) AS id`, [userId]);
  const wanted = own.id === null ? ids : [...ids, own.id];
  const rows = wanted.length === 0 ? [] : await knex('roles as r')
    .leftJoin('role_permissions as rp', 'rp.role_id', 'r.id')
    .whereIn('r.id', wanted).andWhere('r.is_deleted', false)
    .select('r.id', 'r.name', 'rp.area', 'rp.can_add_edit', 'rp.can_delete', 'rp.can_close');
  const byId = new Map<number, { name: string; permissions: Map<Area, Permission> }>();
  for (const r of rows) {
    if (!byId.has(r.id)) byId.set(r.id, { name: r.name, permissions: new Map() });
    if (r.area) byId.get(r.id)!.permissions.set(r.area, { canAddEdit: r.can_add_edit, canDelete: r.can_delete, canClose: r.can_close });
  }
  return { own: own.id, byId };
}

function resolveProject(c: Candidate, user: AuthenticatedUser, roles: Roles): ProjectGrant | null {
  const admin: ProjectGrant = { projectAdmin: true, permissions: new Map(), roleIds: [] };
  const fromRoles = (ids: (number | null)[]): ProjectGrant => {
    const permissions = new Map<Area, Permission>();
    for (const id of ids) {
      for (const [area, p] of roles.byId.get(id ?? -1)?.permissions ?? []) {
        const had = permissions.get(area) ?? NONE;
        permissions.set(area, { canAddEdit: had.canAddEdit || p.canAddEdit, canDelete: had.canDelete || p.canDelete, canClose: had.canClose || p.canClose });
      }
    }
    const projectAdmin = ids.some((id) => id !== null && roles.byId.get(id)?.name === PROJECT_ADMIN_ROLE);
    const roleIds = [...new Set(ids.filter((id): id is number => id !== null && roles.byId.has(id)))];
    return { projectAdmin, permissions: projectAdmin ? new Map() : permissions, roleIds };
  };
  const roleOf = (accessType: string, roleId: number | null) => (accessType === 'SPECIFIC_ROLE' ? roleId : roles.own);

  if (c.created_by_id === user.id) return admin;
  if (c.user_access_type === 'SPECIFIC_ROLE' && c.user_role_id !== null && roles.byId.get(c.user_role_id)?.name === PROJECT_ADMIN_ROLE) return admin;
  if (c.user_access_type === 'NO_ACCESS') return null;
  if (c.user_access_type === 'GLOBAL_ROLE' || c.user_access_type === 'SPECIFIC_ROLE') return fromRoles([roleOf(c.user_access_type, c.user_role_id)]);
  const groups = c.group_grants ?? [];
  const granting = groups.filter((g) => g.accessType === 'GLOBAL_ROLE' || g.accessType === 'SPECIFIC_ROLE');
  if (granting.length > 0) return fromRoles(granting.map((g) => roleOf(g.accessType, g.roleId)));
  if (groups.some((g) => g.accessType === 'NO_ACCESS')) return null;
  if (c.assigned) {
    if (c.default_access_type === 'NO_ACCESS') return null;
    return fromRoles([c.default_access_type === 'SPECIFIC_ROLE' ? c.default_role_id : roles.own]);
  }
  return null;
}

/** The projects whose administration (members, settings, audit trail) the caller may see: 'all' for administrators. */
export function administeredProjectIds(access: ProjectAccess): 'all' | number[] {
  if (access.all) return 'all';
  return [...access.projects].filter(([, grant]) => grant.projectAdmin).map(([id]) => id);
}

/** Does the caller hold the permission in at least one project (e.g. to create a tag, which is global)? */
export function permitsAnywhere(access: ProjectAccess, area: Area, action: keyof Permission): boolean {
  return access.all || [...access.projects.values()].some((grant) => permits(grant, area, action));
}
