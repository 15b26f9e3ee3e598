# Hostile SQL against the extension: no query may crash the
# server or raise an internal error.
#
# 1. The typed fuzzer (test/fuzz/sql_surface.sql): every function,
#    aggregate, window function, operator and cast the extension owns, with
#    edge values of its argument types, in select lists, WHERE clauses over
#    tables with simhash indexes (blocks 1, 4, 16, an index whose rows are all
#    pending) and the near-duplicate constraint, index paths forced and not,
#    ORDER BY, joins and EXPLAIN. Statements run in a fixed shuffled order
#    (seed 42), one psql session, each under statement_timeout = 5 s, until
#    SIMHASH_FUZZ_SQL_SECONDS (default 60) have passed.
# 2. Debian's sqlsmith, as an unprivileged role, against the same database,
#    for SIMHASH_SQLSMITH_QUERIES queries (default 3000) with seed
#    SIMHASH_SQLSMITH_SEED (default 1), at most SIMHASH_SQLSMITH_SECONDS
#    (default 60). Skipped when sqlsmith is not installed (tools/run.sh
#    installs it).
#
# Fails on: a lost connection, any backend terminated by a signal in the
# server log, a PANIC, or an error of SQLSTATE class XX (internal error,
# including index_corrupted; under sqlsmith, only those of the extension:
# its messages, and an estimate the planner rejects). For a longer run:
#   SIMHASH_FUZZ_SQL_SECONDS=1200 SIMHASH_SQLSMITH_QUERIES=200000 \
#   SIMHASH_SQLSMITH_SECONDS=1200 bash tools/run.sh tap test/t/070_sql_fuzz.pl
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Basename qw(dirname);
use List::Util qw(shuffle);
use Time::HiRes qw(time);

my $FUZZ_SECONDS = $ENV{SIMHASH_FUZZ_SQL_SECONDS} // 60;
my $SMITH_QUERIES = $ENV{SIMHASH_SQLSMITH_QUERIES} // 3000;
my $SMITH_SEED = $ENV{SIMHASH_SQLSMITH_SEED} // 1;
my $SMITH_SECONDS = $ENV{SIMHASH_SQLSMITH_SECONDS} // 60;

my $node = PostgreSQL::Test::Cluster->new('fuzz');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
log_statement = none
log_min_error_statement = panic
log_line_prefix = '%e '
restart_after_crash = on
max_parallel_workers_per_gather = 0
jit = off
});
$node->start;

my $surface = dirname(__FILE__) . '/../fuzz/sql_surface.sql';
$node->safe_psql('postgres', PostgreSQL::Test::Utils::slurp_file($surface));
$node->safe_psql('postgres', "ALTER DATABASE postgres SET statement_timeout = '5s'");

# ---- 1. the typed fuzzer
my @stmts = split /\n/, $node->safe_psql('postgres', 'SET statement_timeout = 0; SELECT * FROM fz_statements(150)');
srand(42);
@stmts = shuffle(@stmts);
my $dir = PostgreSQL::Test::Utils::tempdir;
PostgreSQL::Test::Utils::append_to_file("$dir/stmts.sql", join("\n", @stmts) . "\n");
note(scalar(@stmts) . ' statements generated');

my $logstart = -s $node->logfile;
my $out = '';
my $t0 = time;
my $h = IPC::Run::start(
	[
		'psql', '-X', '-e', '-v', 'VERBOSITY=verbose', '-h', $node->host, '-p', $node->port,
		'-d', 'postgres', '-f', "$dir/stmts.sql"
	],
	'<', \undef, '>&', \$out);
# bounded in time: stop the session once the budget is spent
while ($h->pumpable && time - $t0 < $FUZZ_SECONDS)
{
	$h->pump_nb;
	select(undef, undef, undef, 0.2);
}
$h->kill_kill if $h->pumpable;
$h->finish;
my $ran = () = $out =~ /^(?:SELECT|BEGIN|EXPLAIN)\b/mg;
note(sprintf('typed fuzzer: %d of %d statements in %.0f s', $ran, scalar(@stmts), time - $t0));
cmp_ok($ran, '>', 100, 'the typed fuzzer ran statements');

# each failure with the statement echoed before it
my @lines = split /\n/, $out;
my @internal;
my $last = '';
for my $l (@lines)
{
	$last = $l if $l =~ /^(?:SELECT|BEGIN|EXPLAIN)\b/;
	push @internal, "$l\n    after: " . substr($last, 0, 300)
	  if $l =~ /ERROR:  XX\d{3}|connection to server was lost|server closed the connection/;
}
is(scalar(@internal), 0, 'the typed fuzzer: no internal error and no lost connection')
  or diag(join("\n", @internal[ 0 .. ($#internal < 15 ? $#internal : 15) ]));

my $log = slurp_file($node->logfile, $logstart);
my @crashes = grep { /terminated by signal|PANIC|TRAP:/ } split /\n/, $log;
is(scalar(@crashes), 0, 'the typed fuzzer: no backend crashed')
  or diag(join("\n", @crashes[ 0 .. ($#crashes < 15 ? $#crashes : 15) ]));

# ---- 2. sqlsmith
SKIP:
{
	my $smith = `command -v sqlsmith 2>/dev/null`;
	chomp $smith;
	skip 'sqlsmith is not installed', 3 unless $smith;

	$node->safe_psql(
		'postgres', q{
CREATE ROLE smith LOGIN;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO smith;
ALTER ROLE smith SET statement_timeout = '1s';
});
	$logstart = -s $node->logfile;
	my ($sout, $serr) = ('', '');
	$t0 = time;
	my $s = IPC::Run::start(
		[
			$smith,
			'--target=host=' . $node->host . ' port=' . $node->port . ' dbname=postgres user=smith',
			"--seed=$SMITH_SEED", "--max-queries=$SMITH_QUERIES", '--exclude-catalog', '--verbose'
		],
		'<', \undef, '>', \$sout, '2>', \$serr);
	while ($s->pumpable && time - $t0 < $SMITH_SECONDS)
	{
		$s->pump_nb;
		select(undef, undef, undef, 0.2);
	}
	$s->kill_kill if $s->pumpable;
	$s->finish;
	# its final report, or (when stopped by the time bound) its progress
	# marks: one character per query
	my ($queries) = $serr =~ /.*\bqueries: (\d+)/s;
	$queries //= () = join('', grep { /^[.a-zA-Z]+$/ && !/^[A-Z]/ } split /\n/, $serr) =~ /./g;
	note(sprintf('sqlsmith: %s queries in %.0f s; its last report: %s', $queries // '?',
		time - $t0, substr((split /\n/, $serr)[-1] // '', 0, 300)));
	cmp_ok($queries // 0, '>', 0, 'sqlsmith ran queries');
	unlike($serr, qr/server closed the connection|connection to server was lost/,
		'sqlsmith: no lost connection');
	$log = slurp_file($node->logfile, $logstart);
	@crashes = grep { /terminated by signal|PANIC|TRAP:/ } split /\n/, $log;
	is(scalar(@crashes), 0, 'sqlsmith: no backend crashed')
	  or diag(join("\n", @crashes[ 0 .. ($#crashes < 15 ? $#crashes : 15) ]));
	# sqlsmith also reaches PostgreSQL's own internal errors (float8 arrays
	# of the wrong shape, say), so only the extension's count: its messages,
	# and an estimate the planner rejects (its own estimators clamp theirs)
	my @ours = grep { /^XX\d{3} ERROR:.*(simhash|hamming|invalid \w+ selectivity)/i }
	  split /\n/, $log;
	is(scalar(@ours), 0, 'sqlsmith: no internal error of the extension')
	  or diag(join("\n", @ours[ 0 .. ($#ours < 15 ? $#ours : 15) ]));
}

$node->stop;
done_testing();
