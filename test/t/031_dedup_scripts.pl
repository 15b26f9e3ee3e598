# The removal scripts run as a user runs them: psql -f examples/... in a
# psql of its own (the regression suite includes them with \ir and sets
# dedup_continue_on_error to see every error; this runs them without it).
#
# A bad setting stops the script at its first error: exactly one ERROR line
# (no "current transaction is aborted" after it), psql's exit status 3, the
# table unchanged; a good run prints no command tags. A review in report
# mode, a delete and a restore leave the table as it was.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dedup_scripts');
$node->init;
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE docs (id bigint PRIMARY KEY, url text, body text, fp simhash);
INSERT INTO docs SELECT g, 'https://ex.org/' || g, 'page ' || (g % 50) || ' of the site, copy ' || g / 50,
                        (hashint8extended(g % 50, 1) # (g / 50))::simhash
FROM generate_series(1, 200) g;
CREATE TABLE docs_before AS SELECT * FROM docs;
});

# the scripts of this checkout (TESTDIR is the source directory, or holds it as src/)
my ($dir) = grep { -f "$_/dedup.sql" }
  ("$ENV{TESTDIR}/examples", "$ENV{TESTDIR}/src/examples", "$ENV{PWD}/examples");
die "examples/dedup.sql not found" unless $dir;
sub script
{
	my ($name, @vars) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', undef,
		extra_params => [ (map { ('-v', $_) } @vars), '-f', "$dir/$name" ]);
	return ($rc, $out, $err);
}

my $same = q{SELECT (SELECT count(*) FROM (TABLE docs EXCEPT ALL TABLE docs_before) a)
                  + (SELECT count(*) FROM (TABLE docs_before EXCEPT ALL TABLE docs) b)};

for my $case (
	[ 'dedup.sql', [ 'radius=99' ], qr/radius "99" is not a number of bits from 0 to 64/ ],
	[ 'dedup.sql', [ 'id_column=url' ], qr/id_column url of docs is of type text, not an integer/ ],
	[ 'dedup_pairs.sql', [ 'action=purge' ], qr/action "purge" is not report, delete or flag/ ],
	[ 'dedup_pairs.sql', [ 'show=nope' ], qr/table docs has no column nope \(show\)/ ],
	[ 'dedup_restore.sql', [ 'restore=all' ], qr/archive table public\.docs_dedup_archive does not exist/ ])
{
	my ($name, $vars, $msg) = @$case;
	my ($rc, $out, $err) = script($name, 'table=docs', @$vars);
	my $what = "$name -v @$vars";
	is($rc, 3, "$what: psql stops with exit status 3");
	like($err, $msg, "$what: the error says what is wrong");
	my @errors = ($err =~ /ERROR:/g);
	is(scalar @errors, 1, "$what: one error, not one per remaining statement") or diag($err);
	unlike($err, qr/CONTEXT:|current transaction is aborted/, "$what: no context or follow-on lines");
	is($node->safe_psql('postgres', $same), '0', "$what: the table is unchanged");
}

# review, delete, restore: exactly the stated output, and the table comes back
my ($rc, $out, $err) = script('dedup.sql', 'table=docs', 'radius=3', 'show=url');
is($rc, 0, 'report runs');
unlike($out, qr/^(BEGIN|COMMIT|DO|CREATE FUNCTION)$/m, 'no command tags in the report');
like($err, qr/50 groups of near-duplicates .* holding 150 duplicates; report only, nothing changed \(action=delete would remove 150 rows\)/,
	'the summary says what delete would remove');
# (the test's psql prints unaligned rows: n|kept_id|id|role|bits|url)
my @members = ($out =~ /^\d+\|\d+\|\d+\|(?:kept|duplicate)\|\d+\|https:/mg);
is(scalar @members, 200, 'the report lists every row of every group');
($rc, $out, $err) = script('dedup.sql', 'table=docs', 'radius=3', 'action=delete');
is($rc, 0, 'delete runs');
like($err, qr/150 rows deleted, moved to public\.docs_dedup_archive/, 'delete says where the rows went');
is($node->safe_psql('postgres', 'SELECT count(*) FROM docs'), '50', 'one row per group stays');
($rc, $out, $err) = script('dedup_restore.sql', 'table=docs', 'restore=all');
is($rc, 0, 'restore runs');
like($err, qr/150 rows put back into docs from public\.docs_dedup_archive \(all\)/, 'restore says what it did');
is($node->safe_psql('postgres', $same), '0', 'after restore the table is as before');

$node->stop;
done_testing();
