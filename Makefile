# simhash: PostgreSQL extension, built with PGXS.
EXTENSION = simhash
MODULE_big = simhash
DATA = simhash--0.4.0.sql simhash--0.3.0.sql simhash--0.3.0--0.4.0.sql simhash--0.1.0.sql simhash--0.1.0--0.2.0.sql simhash--0.2.0--0.2.1.sql simhash--0.2.1--0.3.0.sql
OBJS = src/module.o \
       src/type/type.o src/type/distance.o src/type/ball.o \
       src/planner/rewrite.o src/planner/selectivity.o src/planner/typanalyze.o \
       src/fingerprint/fingerprint.o src/fingerprint/accum.o src/fingerprint/distinct.o src/fingerprint/minhash.o \
       src/fingerprint/jaccard.o src/fingerprint/tokenize.o src/fingerprint/nfkc.o \
       src/grouping/window.o src/grouping/window_verified.o src/grouping/batch.o src/grouping/spill.o \
       src/grouping/pigeonhole.o src/grouping/pigeonhole_partners.o src/grouping/pigeonhole_pack.o \
       src/mih/mih_handler.o src/mih/mih_page.o src/mih/mih_run_write.o src/mih/mih_merge_runs.o src/mih/mih_merge_policy.o src/mih/mih_recycle.o src/mih/mih_build.o \
       src/mih/mih_insert.o src/mih/mih_scan.o src/mih/mih_scan_visit.o src/mih/mih_cache.o src/mih/mih_cache_pos.o src/mih/mih_cache_pend.o src/mih/mih_cache_screen.o src/mih/mih_knn.o src/mih/mih_probe.o src/mih/mih_vacuum.o src/mih/mih_cost.o \
       src/mih/mih_opclass.o src/mih/mih_inspect.o src/mih/mih_verify.o src/mih/mih_leaf.o

# pg_regress suites, in order (sql/NAME.sql against expected/NAME.out)
REGRESS = type distance rewrite fingerprint jaccard minhash vectors index index_cache index_compact index_skew index_retired knn exclude operands pairs dedup dedup_verified dedup_script dedup_pairs dedup_review security upgrade
# every suite runs alone or in any order: the test database gets the extension before any
# suite runs (a suite that drops it, upgrade, leaves the default version installed again)
REGRESS_OPTS = --load-extension=simhash

# xxHash is used header-only (XXH_INLINE_ALL): libxxhash-dev at build time only
PG_CPPFLAGS += -I$(srcdir)/src
# extra warnings for our own code; CI adds -Werror through COPT
PG_CFLAGS += -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The removal scripts (doc/dedup.md), installed as documentation in
# $(docdir)/simhash/ (Debian: /usr/share/doc/postgresql-doc-15/simhash/); they include each
# other by relative path, so they stay together
EXAMPLES = examples/dedup.sql examples/dedup_pairs.sql examples/dedup_settings.sql examples/dedup_finish.sql \
           examples/dedup_variables.sql \
           examples/dedup_restore.sql
.PHONY: install-examples uninstall-examples
install: install-examples
install-examples:
	$(MKDIR_P) '$(DESTDIR)$(docdir)/simhash'
	$(INSTALL_DATA) $(addprefix $(srcdir)/, $(EXAMPLES)) '$(DESTDIR)$(docdir)/simhash/'
uninstall: uninstall-examples
uninstall-examples:
	rm -f $(addprefix '$(DESTDIR)$(docdir)/simhash'/, $(notdir $(EXAMPLES)))

# PGXS does not track header dependencies; every object depends on our headers
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# VPATH builds (pg_buildext builds in build-<version>/, make -f ../Makefile
# VPATH=..): the object directories do not exist there yet, and suites
# include examples/dedup.sql and test/regress/*.sql from the current directory
ifneq ($(abspath $(srcdir)),$(CURDIR))
$(shell mkdir -p src/mih src/type src/planner src/fingerprint src/grouping && ln -sfn $(abspath $(srcdir))/examples examples && \
	ln -sfn $(abspath $(srcdir))/test test)
endif

# TAP suites (test/t/*.pl, PostgreSQL::Test::Cluster). initdb refuses root,
# so run this as an ordinary user; TESTDIR must be writable by that user.
TAP_TESTDIR ?= $(CURDIR)
.PHONY: tapcheck
tapcheck:
	rm -rf '$(TAP_TESTDIR)/tmp_check' && mkdir -p '$(TAP_TESTDIR)/tmp_check'
	TESTDIR='$(TAP_TESTDIR)' PATH="$(bindir):$$PATH" \
	PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' \
	$(PROVE) -I '$(top_srcdir)/src/test/perl' -I '$(srcdir)/test' $(PROVE_FLAGS) \
		$(if $(PROVE_TESTS),$(PROVE_TESTS),'$(srcdir)'/test/t/*.pl)

.PHONY: fuzz
fuzz:
	$(MAKE) -C test/fuzz
