# Fingerprints on a real server: independence from the database encoding, very
# long documents, and cancellation of a long fingerprint run.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('fp');
$node->init(extra => [ '--encoding=UTF8', '--locale=C' ]);
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION simhash');

# --- the same text gives the same fingerprint in UTF8, LATIN1 and SQL_ASCII databases
for my $enc ('LATIN1', 'SQL_ASCII')
{
	my $db = lc("db_$enc");
	$node->safe_psql('postgres',
		"CREATE DATABASE $db ENCODING '$enc' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
	$node->safe_psql($db, 'CREATE EXTENSION simhash');
}
# text representable in LATIN1; sent from a UTF-8 client
my @docs = ('Café crème, naïve façade; Straße ÄÖÜ', 'plain ascii words only',
	'Ünïcödé wörds wïth äccents and MIXED case');
for my $doc (@docs)
{
	for my $mode ("'words', 1", "'words', 2", "'chars', 3")
	{
		my $q = "SELECT simhash(\$\$$doc\$\$::text, $mode), "
		  . "simhash(ARRAY(SELECT feature FROM simhash_features(\$\$$doc\$\$::text, $mode)))";
		my $utf8 = $node->safe_psql('postgres', $q);
		my $latin1 = $node->safe_psql('db_latin1', "SET client_encoding = UTF8; $q");
		is($latin1, $utf8, "LATIN1 database gives the UTF8 result for ($mode) of '$doc'");
	}
}
# SQL_ASCII stores the client's bytes as they are: with a UTF-8 client that is UTF-8
my $q = "SELECT simhash('Café crème naïve'::text)";
is($node->safe_psql('db_sql_ascii', $q), $node->safe_psql('postgres', $q),
	'SQL_ASCII database holding UTF-8 bytes gives the UTF8 result');

# --- very long documents run through, in every script path
# 300 MB of ASCII words; 90 MB of Chinese (no ASCII at all, so the normaliser is
# fed in bounded segments); each must equal the fingerprint of a much shorter
# repetition of the same text: repetition multiplies every count, so the sign
# of every bit sum, and so the fingerprint, is unchanged.
for my $case (
	[ 'ascii', "'lorem ipsum dolor sit amet '", 11_000_000 ],
	[ 'chinese', "'中文字符测试繁體'", 4_000_000 ],
	[ 'mixed', "'naïve café 東京 ＡＢＣ e' || U&'\\0301' || ' '", 3_000_000 ])
{
	my ($name, $unit, $times) = @$case;
	my $long = $node->safe_psql('postgres',
		"SELECT simhash(repeat($unit, $times)), simhash(repeat($unit, $times), 'chars', 3)");
	my $short = $node->safe_psql('postgres',
		"SELECT simhash(repeat($unit, 3)), simhash(repeat($unit, 3), 'chars', 3)");
	# the chars n-grams at the very start and end differ in count by a constant, so
	# compare only the words fingerprint exactly and require chars to be non-NULL
	my ($lw, $lc) = split /\|/, $long;
	my ($sw, $sc) = split /\|/, $short;
	is($lw, $sw, "$name: fingerprint of the long document equals the short repetition's");
	like($lc, qr/^[0-9a-f]{16}$/, "$name: chars fingerprint of the long document computed");
}

# --- a long fingerprint run is cancelled by statement_timeout while it runs
# Time the very statement that is then cancelled, run to its end, and cancel it
# after 100 ms: the error must come long before the run could have finished,
# which only happens when the tokeniser checks for interrupts.  Both timings
# include the same client start and the same 540 MB repeat(), so a loaded
# machine slows both alike (an earlier version compared with a cheaper words
# run and failed once on a busy CI machine).
my $doc = "repeat('lorem ipsum dolor sit amet ', 20000000)";    # 540 MB
my $stmt = "SELECT simhash($doc, 'chars', 4) IS NOT NULL";
my $t0 = time;
is($node->safe_psql('postgres', $stmt), 't', 'chars 4-gram run over 540 MB completes');
my $full = time - $t0;
my ($stderr, $t1);
$t1 = time;
$node->psql('postgres', "SET statement_timeout = '100ms'; $stmt", stderr => \$stderr);
my $cancel = time - $t1;
like($stderr, qr/canceling statement due to statement timeout/, 'fingerprint run is cancelled');
note(sprintf('full run %.2f s, cancelled after %.2f s', $full, $cancel));
cmp_ok($cancel, '<', $full / 2, 'cancellation happens during the run, not after it');

$node->stop;
done_testing();
