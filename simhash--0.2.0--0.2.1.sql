/* simhash--0.2.0--0.2.1.sql: update from 0.2.0 to 0.2.1.
 *
 * 0.2.1 fixes the index's library only (README.md, "Release notes"): a race
 * between a merge and an insert could corrupt a simhash index under VACUUM
 * and steady inserts. No SQL object changes, so this step is empty; it
 * exists so that extversion says which release a database runs. Indexes the
 * race damaged need REINDEX INDEX CONCURRENTLY (simhash_index_verify finds
 * them); undamaged ones need nothing.
 */

\echo Use "ALTER EXTENSION simhash UPDATE TO '0.2.1'" to load this file. \quit
