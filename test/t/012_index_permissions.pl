# Permissions are checked before locks.
#
# simhash_index_verify() takes a SHARE lock on the table, which stalls every
# writer; simhash_index_info() and simhash_index_pages() read the index. A
# role that may not do that must be refused at once, without queueing a lock
# on somebody else's table (a catalog included). To see "without a lock"
# deterministically, another transaction holds an ACCESS EXCLUSIVE lock on
# the table (and, for the inspection functions, on the index) from a
# prepared transaction, and the calls run with lock_timeout: a call that
# asks for the lock first ends with a lock timeout instead of the
# permission error.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('perm');
$node->init;
$node->append_conf('postgresql.conf', "max_prepared_transactions = 4\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE t (id int, fp simhash);
INSERT INTO t SELECT g, (g * 7919)::int8::simhash FROM generate_series(1, 1000) g;
CREATE INDEX t_fp ON t USING simhash (fp);
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
GRANT SELECT ON t TO alice;
-- carol may read the table but was granted nothing on the function
-- (granted here: from PostgreSQL 18 on GRANT waits for the table's lock)
GRANT SELECT ON t TO carol;
-- a DBA may let a role run the check; it must still own the table
GRANT EXECUTE ON FUNCTION simhash_index_verify(regclass) TO alice, bob;
});

# the owner (here a superuser) can verify
is( $node->safe_psql(
		'postgres', "SELECT heap_tuples_checked FROM simhash_index_verify('t_fp')"),
	'1000',
	'the owner verifies the index');

# hold ACCESS EXCLUSIVE on the table and its index in a prepared transaction
$node->safe_psql(
	'postgres', q{
BEGIN;
LOCK TABLE t IN ACCESS EXCLUSIVE MODE;
REINDEX INDEX t_fp;  -- ACCESS EXCLUSIVE on the index
PREPARE TRANSACTION 'hold';
});

sub call_as
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql(
		'postgres', "SET lock_timeout = '2s'; SET ROLE $role; $sql");
	return $err;
}

my $err = call_as('alice', "SELECT * FROM simhash_index_verify('t_fp')");
like($err, qr/must be owner of table t/,
	'a role with SELECT but not owning the table may not verify its index');
unlike($err, qr/lock timeout/, '... and is refused before it asks for the table lock');

$err = call_as('bob', "SELECT * FROM simhash_index_verify('t_fp')");
like($err, qr/must be owner of table t/, 'a role without any privilege may not verify');
unlike($err, qr/lock timeout/, '... refused before the lock');

# a catalog's index is no simhash index: refused before pg_class is locked
$err = call_as('bob', "SELECT * FROM simhash_index_verify('pg_class_oid_index')");
like($err, qr/"pg_class_oid_index" is not a simhash index/, 'a catalog index is refused');

# by default PUBLIC may not run the check at all
$err = call_as('carol', "SELECT * FROM simhash_index_verify('t_fp')");
like($err, qr/permission denied for function simhash_index_verify/,
	'EXECUTE on simhash_index_verify is not granted to PUBLIC');

# the inspection functions need SELECT on the table, checked before the index lock
for my $fn ('simhash_index_info', 'simhash_index_pages')
{
	$err = call_as('bob', "SELECT count(*) FROM $fn('t_fp')");
	like($err, qr/permission denied for table t/, "$fn: a role without SELECT is refused");
	unlike($err, qr/lock timeout/, "$fn: ... before it asks for the index lock");
}

$node->safe_psql('postgres', "COMMIT PREPARED 'hold'");

# with the lock gone, a role with SELECT reads the summary
is( $node->safe_psql(
		'postgres', "SET ROLE alice; SELECT run_entries[1] FROM simhash_index_info('t_fp')"),
	'1000',
	'a role with SELECT reads simhash_index_info');

$node->stop;
done_testing();
