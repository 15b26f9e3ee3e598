# The verified removal README.md recommends, on real texts of this machine:
# Debian's common licences, every package's copyright file and the man3
# pages of manpages-dev (tools/run.sh installs it), one row each, with a
# generated minhash(body) column and its index. Then
#   psql -v table=texts -v fp_column=mh -v radius=12 -v verify_column=body
#        -v verify_threshold=0.8 -v action=delete -f examples/dedup.sql
# must leave no two rows with the same text and no two rows within 12 bits
# whose word 5-gram Jaccard similarity reaches 0.8 (the groups are formed on
# verified pairs: before, 284 byte-identical copies stayed, each turned down
# by an unrelated kept row); a second run removes nothing; the archive holds
# exactly the deleted rows and restore=all gives the table back; and
# examples/dedup_pairs.sql reports the same groups as examples/dedup.sql,
# with both methods.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Cwd qw(abs_path);
use IO::Uncompress::Gunzip qw(gunzip $GunzipError);

my @paths = (sort(glob('/usr/share/common-licenses/*')), sort(glob('/usr/share/doc/*/copyright')),
	sort(glob('/usr/share/man/man3/*.3*')));
my $copy = '';
my $n = 0;
for my $path (@paths)
{
	next unless -f $path && -r $path;
	my $data;
	if ($path =~ /\.gz$/)
	{
		gunzip($path => \$data) or next;
	}
	else
	{
		open(my $fh, '<:raw', $path) or next;
		local $/;
		$data = <$fh>;
		close($fh);
	}
	next if $data =~ /\0/;
	next unless utf8::decode($data);
	utf8::encode($data);
	$data =~ s/\\/\\\\/g;
	$data =~ s/\t/\\t/g;
	$data =~ s/\n/\\n/g;
	$data =~ s/\r/\\r/g;
	(my $name = $path) =~ s{^/usr/share/(doc/|man/man3/|common-licenses/)}{};
	$n++;
	$copy .= "$n\t$name\t$data\n";
}
cmp_ok($n, '>=', 2000, "$n texts read (licences, copyright files, man3 pages)");

my $node = PostgreSQL::Test::Cluster->new('dedup_real');
$node->init;
$node->start;
# (the server reads it: an absolute path, as tempdir() may give a relative one)
my $tsv = abs_path(PostgreSQL::Test::Utils::tempdir()) . '/texts.tsv';
open(my $out, '>:raw', $tsv) or die "$tsv: $!";
print $out $copy;
close($out);
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION simhash;
CREATE TABLE texts (id bigint PRIMARY KEY, name text, body text,
                    mh simhash GENERATED ALWAYS AS (minhash(body)) STORED);
COPY texts (id, name, body) FROM '$tsv';
CREATE INDEX ON texts USING simhash (mh);
CREATE TABLE texts_before AS SELECT id, name, body FROM texts;
});

my ($dir) = grep { -f "$_/dedup.sql" }
  ("$ENV{TESTDIR}/examples", "$ENV{TESTDIR}/src/examples", "$ENV{PWD}/examples");
die "examples/dedup.sql not found" unless $dir;
sub script
{
	my ($name, @vars) = @_;
	my ($rc, $stdout, $err) = $node->psql('postgres', undef,
		extra_params => [ (map { ('-v', $_) } @vars), '-f', "$dir/$name" ]);
	is($rc, 0, "$name @vars runs") or diag($err);
	return $err;
}
my @recommended = ('table=texts', 'fp_column=mh', 'radius=12', 'verify_column=body', 'verify_threshold=0.8');

my $copies = $node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT body) FROM texts');
cmp_ok($copies, '>', 0, "the corpus holds $copies byte-identical copies");

# the same groups from both scripts, both methods (report mode)
for my $method ('leader', 'component')
{
	script('dedup.sql', @recommended, "method=$method", 'report_rows=0', 'report_table=r_window');
	script('dedup_pairs.sql', @recommended, "method=$method", 'report_rows=0', 'report_table=r_pairs');
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM ((SELECT kept_id, id, role, bits, jaccard FROM r_window
                       EXCEPT SELECT kept_id, id, role, bits, jaccard FROM r_pairs)
                      UNION ALL
                      (SELECT kept_id, id, role, bits, jaccard FROM r_pairs
                       EXCEPT SELECT kept_id, id, role, bits, jaccard FROM r_window)) d}),
		'0',
		"$method: dedup_pairs.sql reports the groups dedup.sql reports");
	$node->safe_psql('postgres', 'DROP TABLE r_window, r_pairs');
}

# the verified delete
my $err = script('dedup.sql', @recommended, 'action=delete');
my ($deleted) = $err =~ /(\d+) rows deleted/;
ok(defined $deleted && $deleted > 0, 'the delete removed rows') or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT body) FROM texts'),
	'0', 'no two remaining rows have the same text');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM texts a JOIN texts b ON b.mh <~> a.mh <= 12 AND a.id < b.id
WHERE simhash_jaccard(a.body, b.body, 'mixed', 5) >= 0.8}),
	'0',
	'no two remaining rows within 12 bits reach the threshold');
is($node->safe_psql('postgres', 'SELECT count(*) FROM texts_dedup_archive'),
	$deleted, 'the archive holds exactly the deleted rows');
$err = script('dedup.sql', @recommended, 'action=delete');
like($err, qr/ 0 groups of near-duplicates .* 0 rows deleted/, 'a second run removes nothing');

# restore: the table as it was
script('dedup_restore.sql', 'table=texts', 'restore=all');
is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT count(*) FROM (SELECT id, name, body FROM texts EXCEPT ALL TABLE texts_before) a)
     + (SELECT count(*) FROM (TABLE texts_before EXCEPT ALL SELECT id, name, body FROM texts) b)}),
	'0',
	'restore=all gives the table back');

$node->stop;
done_testing();
