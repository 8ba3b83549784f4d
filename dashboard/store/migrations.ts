/**
 * Versioned migrations, applied in order at start inside one transaction each, and recorded in
 * `schema_migrations`. A migration is never edited once released: a change is a new version.
 * The two dialects differ only where SQL does (an auto-incremented sequence).
 */
import { detailTables } from '../analytics/details-store.ts';
import { ANALYTICS_TABLES } from '../analytics/store.ts';

/** One migration: its version and its statements per dialect. */
export interface Migration {
  version: number;
  description: string;
  sqlite: readonly string[];
  postgres: readonly string[];
}

const tables = (seq: string): string[] => [
  `CREATE TABLE organisations (
     id TEXT PRIMARY KEY,
     body TEXT NOT NULL,
     created_at BIGINT NOT NULL,
     updated_at BIGINT NOT NULL)`,
  `CREATE TABLE documents (
     org_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     id TEXT NOT NULL,
     body TEXT NOT NULL,
     lookup TEXT,
     created_at BIGINT NOT NULL,
     updated_at BIGINT NOT NULL,
     PRIMARY KEY (org_id, kind, id))`,
  `CREATE UNIQUE INDEX documents_lookup ON documents (kind, lookup)`,
  `CREATE INDEX documents_order ON documents (org_id, kind, created_at, id)`,
  `CREATE TABLE audit_log (
     seq ${seq},
     org_id TEXT NOT NULL,
     at BIGINT NOT NULL,
     actor TEXT NOT NULL,
     action TEXT NOT NULL,
     kind TEXT NOT NULL,
     object_id TEXT NOT NULL,
     before_hash TEXT,
     after_hash TEXT)`,
  `CREATE INDEX audit_log_org ON audit_log (org_id, seq)`,
];

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'organisations, documents, audit log',
    sqlite: tables('INTEGER PRIMARY KEY AUTOINCREMENT'),
    postgres: tables('BIGSERIAL PRIMARY KEY'),
  },
  {
    version: 2,
    description: 'traffic analytics rollups',
    sqlite: ANALYTICS_TABLES,
    postgres: ANALYTICS_TABLES,
  },
  {
    version: 3,
    description: 'detailed analytics records',
    sqlite: detailTables('INTEGER PRIMARY KEY AUTOINCREMENT'),
    postgres: detailTables('BIGSERIAL PRIMARY KEY'),
  },
];

/** The table that records applied versions (same SQL in both dialects). */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at BIGINT NOT NULL)`;
