# A damaged compact leaf (src/mih/mih_leaf.h) is reported, never read past:
# its header, overwritten on disk while the server is down, claims more
# entries than the page holds, an entry format no writer makes, or a group
# directory out of order. Searches that read the leaf (a radius search that
# reads table 0 whole, nearest neighbours) and simhash_index_verify must
# fail with index_corrupted naming the block, the server must stay up, and
# REINDEX must repair the index.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
# the damage is ours to find: a page checksum (on by default from 18) would
# report it first
ignore_checksum_failure = on
});
$node->start;

# 40,000 rows whose top 24 bits are zero (about 38 rows a 16-bit block value):
# one run of compact leaves
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE t (id int, fp simhash);
INSERT INTO t SELECT g, ('x' || left(md5('k' || g), 16))::bit(64)::simhash & '000000ffffffffff'
FROM generate_series(1, 40000) g;
CREATE INDEX t_fp ON t USING simhash (fp);
});

my $datadir = $node->data_dir;
my $path = $node->safe_psql('postgres', "SELECT pg_relation_filepath('t_fp')");

# the first compact leaf of table 0, and its page in the file
sub compact_leaf
{
	my $blk = $node->safe_psql('postgres',
		"SELECT min(blkno) FROM simhash_index_pages('t_fp') WHERE type = 'leaf' AND level = 1 AND \"table\" = 0"
	);
	ok($blk ne '', "table 0 has a compact leaf (block $blk)");
	return $blk;
}

# Overwrite bytes of a page's contents (after the 24-byte page header) with
# the server stopped.
sub damage
{
	my ($blk, $offset, $bytes) = @_;
	$node->stop;
	open(my $fh, '+<', "$datadir/$path") or die "open $datadir/$path: $!";
	binmode $fh;
	seek($fh, $blk * 8192 + 24 + $offset, 0) or die "seek: $!";
	print $fh $bytes;
	close($fh) or die "close: $!";
	$node->start;
}

sub read_bytes
{
	my ($blk, $offset, $len) = @_;
	open(my $fh, '<', "$datadir/$path") or die "open: $!";
	binmode $fh;
	seek($fh, $blk * 8192 + 24 + $offset, 0) or die "seek: $!";
	my $buf;
	read($fh, $buf, $len) == $len or die "read: $!";
	close($fh);
	return $buf;
}

# Every way of reading the leaf fails with the corruption error, and the
# server stays up; REINDEX repairs it.
sub expect_reported
{
	my ($what, $pattern) = @_;
	my %reads = (
		'a radius search reading table 0 whole' =>
		  "SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM t WHERE fp <~> 'ffffff0000000000' <= 40",
		'nearest neighbours reading table 0' =>
		  "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off; SELECT count(*) FROM (SELECT id FROM t ORDER BY fp <-> '0000000000000000' LIMIT 40000) x",
		'simhash_index_verify' => "SELECT * FROM simhash_index_verify('t_fp')");
	for my $read (sort keys %reads)
	{
		my ($ret, $stdout, $stderr) = $node->psql('postgres', $reads{$read});
		isnt($ret, 0, "$what: $read fails");
		like($stderr, $pattern, "$what: $read reports it");
		unlike($stderr, qr/server closed|terminated|TRAP/, "$what: $read does not crash");
	}
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$what: the server is up");
	$node->safe_psql('postgres', 'REINDEX INDEX t_fp');
	$path = $node->safe_psql('postgres', "SELECT pg_relation_filepath('t_fp')");
	is( $node->safe_psql('postgres', "SELECT heap_tuples_checked FROM simhash_index_verify('t_fp')"),
		'40000', "$what: REINDEX repairs the index");
}

# header: nentries (uint16), ngroups (uint16), rem_bytes, tid_bytes, off_bits, unused
my $blk = compact_leaf();
damage($blk, 0, pack('v', 60000));
expect_reported('a leaf claiming 60,000 entries',
	qr/index "t_fp" is corrupted: compact leaf block $blk has more entries than fit/);

$blk = compact_leaf();
damage($blk, 5, pack('C', 9));
expect_reported('a TID field of 9 bytes',
	qr/index "t_fp" is corrupted: compact leaf block $blk has an impossible entry format/);

# group keys start after the 8-byte header: make the second equal to the first
$blk = compact_leaf();
damage($blk, 16, read_bytes($blk, 8, 8));
expect_reported('a group directory out of order',
	qr/index "t_fp" is corrupted: compact leaf block $blk has a group directory out of order/);

my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP|terminated by signal/, 'no PANIC, failed assertion or crashed backend');

$node->stop;
done_testing();
