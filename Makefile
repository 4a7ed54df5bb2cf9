# graft: the one build entry. `make` builds the CLI and the libraries; `make test` runs every
# test; `make asan` runs them under AddressSanitizer + UBSan; `make demo` runs the main job.
# Sources are found by folder: a new .c file in a layer folder is built with no edit here.

BUILD ?= build
CC ?= cc
OPT ?= -O2
WERROR ?=
SAN ?=
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -g $(OPT) -Wall -Wextra -Wshadow -Wstrict-prototypes \
              -Wmissing-prototypes -Wno-missing-field-initializers -fPIC $(VISIBILITY) $(SAN) \
              $(if $(WERROR),-Werror,) -I. -I$(BUILD)/gen -MMD -MP
# Only GR_API functions (base/api.h) leave libgraft.so.
VISIBILITY = -fvisibility=hidden
LLVM_CONFIG ?= llvm-config-14
LDLIBS = -lm -lpthread

# The library's folders, bottom layer first; an include may only point down (DESIGN.md's layer
# picture, checked by scripts/check_layers.sh in `make test`, which also keeps this list in step).
LAYERS = include base ir ir/ops ir/text ir/transform patterns runtime runtime/kernels runtime/exec runtime/json byoc frontend/onnx backends/json backends/llvm backends/dnnl backends inspect deploy
LIB_SRC = $(foreach d,$(LAYERS),$(wildcard $(d)/*.c))
LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_SRC = $(wildcard tools/*.c tools/*/*.c)
TOOL_OBJ = $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC = $(wildcard tests/*/*.c)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC = $(wildcard bench/*.c)
BENCH_BIN = $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

# Optional libraries join the link once a layer uses them (each stays inside its own folder).
# libLLVM is not linked: host code loads it when first needed (backends/llvm/llvm_api_impl.h), so
# only its headers and its folder (a last place to look for it) are used here.
ifneq ($(wildcard backends/llvm/*.c),)
LLVM_LIBS = -ldl
$(BUILD)/obj/backends/llvm/%.o: CFLAGS_EXTRA = $(shell $(LLVM_CONFIG) --cflags | sed 's/-std=[^ ]*//') \
    -DGR_LLVM_LIBDIR='"$(shell $(LLVM_CONFIG) --libdir)"'
endif
ifneq ($(wildcard backends/dnnl/*.c),)
DNNL_LIBS = -ldnnl
endif
ifneq ($(wildcard frontend/onnx/*.c),)
PROTOC_LIBS = -lprotobuf-c
endif
JSON_LIBS = -ljansson
# graft explore lays its graph out with Graphviz (the tool only; dot and the SVG renderer are
# linked in as builtin plugins). The page's script and style are compiled in from
# tools/explore_page.html.
GVC_PLUGINS = $(shell pkg-config --variable=libdir libgvc 2>/dev/null)/graphviz
GVC_LIBS = -lgvc -lcgraph -lcdt -L$(GVC_PLUGINS) -Wl,-rpath,$(GVC_PLUGINS) -lgvplugin_dot_layout -lgvplugin_core

# ONNX bindings: protoc-c over Debian's onnx.proto, generated into $(BUILD)/gen (never committed;
# rules below `all`).
ifneq ($(wildcard frontend/onnx/*.c),)
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
ONNX_GEN = $(BUILD)/gen/onnx
LIB_OBJ += $(BUILD)/obj/gen/onnx/onnx.pb-c.o
endif
# Artifact container: protoc-c over deploy/graft_artifact.proto, generated into $(BUILD)/gen.
ifneq ($(wildcard deploy/graft_artifact.proto),)
ART_GEN = $(BUILD)/gen/graft
LIB_OBJ += $(BUILD)/obj/gen/graft/graft_artifact.pb-c.o
PROTOC_LIBS = -lprotobuf-c
endif
EXT_LIBS = $(LLVM_LIBS) $(DNNL_LIBS) $(PROTOC_LIBS) $(JSON_LIBS)

.PHONY: all deps models test asan tsan fuzz fuzz-build fuzz-bins tvm-oracle demo bench clean install
all: $(BUILD)/graft $(BUILD)/libgraft.a $(BUILD)/libgraft.so $(BUILD)/graft.pc $(BUILD)/graft-uninstalled.pc plugins

deps:
	@bash scripts/deps.sh

# Real models (PP-OCR; the zoo and the recurrent test models exported by python3-torch) and
# ONNX Runtime reference outputs, cached in build/third_party.
models: deps
	@bash scripts/fetch_models.sh
	@bash scripts/fetch_zoo.sh
	@bash scripts/fetch_rnn_models.sh
	@bash scripts/fetch_symbolic.sh

# Objects are rebuilt when the flags that change their code or their symbols change (a warm
# build/ from before -fvisibility=hidden would otherwise keep exporting everything).
CODE_FLAGS = $(OPT) $(SAN) $(VISIBILITY)
$(BUILD)/code_flags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CODE_FLAGS)' | cmp -s - $@ || echo '$(CODE_FLAGS)' > $@
.PHONY: FORCE
$(BUILD)/obj/%.o: %.c $(BUILD)/code_flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_EXTRA) $(WARN_EXTRA) $(CFLAGS) -c $< -o $@
# The library and the CLI are ISO C11, not GNU C: -Wpedantic (an error with WERROR=1) catches
# what GCC accepts as an extension, e.g. a call or a compound literal in a static initializer.
$(LIB_OBJ) $(TOOL_OBJ): WARN_EXTRA = -Wpedantic

$(BUILD)/libgraft.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libgraft.so: $(LIB_OBJ) scripts/libgraft.map
	$(CC) -shared $(SAN) -Wl,--version-script=scripts/libgraft.map -o $@ $(LIB_OBJ) $(EXT_LIBS) $(LDLIBS)

# pkg-config: graft.pc describes the installed library (`make install PREFIX=...`);
# graft-uninstalled.pc the one in this tree (`pkg-config --with-path=build graft-uninstalled`).
# Their Cflags name one folder, the one holding graft/ of the public headers (include/graft:
# graft.h, backend_plugin.h), the only headers installed. The other libraries are private
# (libgraft.a needs them too).
PREFIX ?= /usr/local
PC_PRIVATE = $(filter -l%,$(EXT_LIBS)) $(LDLIBS)
define GRAFT_PC
Name: graft
Description: graft: import ONNX or Relax text, offload regions to oneDNN / JSON / backend plugins, build and run deployable models
Version: 0.1.0
Cflags: -I$${includedir}
Libs: -L$${libdir} -lgraft
Libs.private: $(PC_PRIVATE)
endef
export GRAFT_PC
# Rewritten when PREFIX changes (`make install PREFIX=...` after a plain `make`).
$(BUILD)/graft.pc: Makefile FORCE
	@mkdir -p $(dir $@)
	@{ printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\n' '$(PREFIX)'; echo "$$GRAFT_PC"; } > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(BUILD)/graft-uninstalled.pc: Makefile
	@mkdir -p $(dir $@)
	{ printf 'libdir=%s\nincludedir=%s\n\n' '$(abspath $(BUILD))' '$(CURDIR)/include'; echo "$$GRAFT_PC"; } > $@

PUBLIC_HEADERS = $(wildcard include/graft/*.h)
install: $(BUILD)/libgraft.a $(BUILD)/libgraft.so $(BUILD)/graft.pc
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/graft
	install -m 644 $(BUILD)/libgraft.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libgraft.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(BUILD)/graft.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(PREFIX)/include/graft/

# Backend plugins (include/graft/backend_plugin.h), each built as its own shared library
# against the public headers alone (-Iinclude, never the tree's root): the test plugin of
# tests/plugin and plugins/<name>/ (plugins/<name>/plugin.mk adds its libraries).
PLUGIN_CFLAGS = -std=c11 -D_GNU_SOURCE -g $(OPT) -Wall -Wextra -Wpedantic $(if $(WERROR),-Werror,) -fPIC \
                -fvisibility=hidden $(SAN) -Iinclude
PLUGINS = $(patsubst plugins/%/,%,$(dir $(wildcard plugins/*/*.c)))
PLUGIN_LIBS = $(foreach p,$(sort $(PLUGINS)),$(BUILD)/plugins/libgraft_$(p).so)
-include $(wildcard plugins/*/plugin.mk)
.SECONDEXPANSION:
$(BUILD)/plugins/libgraft_%.so: $(PUBLIC_HEADERS) $$(wildcard plugins/$$*/*.c plugins/$$*/*.h plugins/$$*/*.relax)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_CFLAGS) -shared -o $@ $(wildcard plugins/$*/*.c) $(PLUGIN_LDLIBS_$*)
	$(if $(wildcard plugins/$*/*.relax),cp $(wildcard plugins/$*/*.relax) $(dir $@))
# The test plugin (tests/plugin/testplugin) in the variants its tests load, one folder each
# (its pattern file beside it): base; abi2, built for another plugin ABI major (refused);
# abi10, a plugin of ABI 1.0 (loads); abi11, one of ABI 1.1 (no stored forms: compiles an
# artifact's regions); next, another major version of the plugin itself.
TESTPLUGIN_FLAGS_base =
TESTPLUGIN_FLAGS_abi2 = -DTESTPLUGIN_ABI_MAJOR=2
TESTPLUGIN_FLAGS_abi10 = -DTESTPLUGIN_ABI_1_0
TESTPLUGIN_FLAGS_next = -DTESTPLUGIN_VERSION='"2.0.0"'
TESTPLUGIN_FLAGS_abi11 = -DTESTPLUGIN_ABI_1_1
TEST_PLUGINS = $(patsubst %,$(BUILD)/tests/plugins/%/libgraft_testplugin.so,base abi2 abi10 abi11 next)
$(BUILD)/tests/plugins/%/libgraft_testplugin.so: tests/plugin/testplugin/testplugin.c \
        tests/plugin/testplugin/testplugin_patterns.relax $(PUBLIC_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_CFLAGS) $(TESTPLUGIN_FLAGS_$*) -shared -o $@ $<
	cp tests/plugin/testplugin/testplugin_patterns.relax $(dir $@)
.PHONY: plugins check-public
plugins: $(PLUGIN_LIBS) $(TEST_PLUGINS)

# The public headers are enough: the examples, serve/triton and the plugins build with the
# Cflags of graft-uninstalled.pc alone, and the guide's sample plugin out of tree with
# `pkg-config graft` (scripts/check_public.sh).
check-public: all plugins
	sh scripts/check_public.sh $(BUILD)

$(BUILD)/graft: $(TOOL_OBJ) $(BUILD)/libgraft.a
	$(CC) $(SAN) -o $@ $(TOOL_OBJ) $(BUILD)/libgraft.a $(EXT_LIBS) $(GVC_LIBS) $(LDLIBS)

$(BUILD)/gen/explore_page.h: tools/explore_page.html
	@mkdir -p $(dir $@)
	{ echo '#define EXPLORE_PAGE \'; sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n" \\/' $<; echo '""'; } > $@
$(BUILD)/obj/tools/explore_html.o: $(BUILD)/gen/explore_page.h
# The embedded page is one string longer than ISO's 4095-character minimum that compilers must
# accept; GCC and clang take it.
$(BUILD)/obj/tools/explore_html.o: WARN_EXTRA = -Wpedantic -Wno-overlength-strings

$(BUILD)/tests/run_tests: $(TEST_OBJ) $(BUILD)/libgraft.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $(TEST_OBJ) $(BUILD)/libgraft.a -lcriterion $(EXT_LIBS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libgraft.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(BUILD)/libgraft.a $(EXT_LIBS) $(LDLIBS)

ifdef ONNX_GEN
$(ONNX_GEN)/onnx.pb-c.c $(ONNX_GEN)/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(ONNX_GEN)
	cp $< $(ONNX_GEN)/onnx.proto
	cd $(ONNX_GEN) && protoc-c --c_out=. onnx.proto
$(BUILD)/obj/gen/onnx/onnx.pb-c.o: $(ONNX_GEN)/onnx.pb-c.c $(BUILD)/code_flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -c $< -o $@
# The importer's (and its tests') objects wait for the generated header.
$(filter $(BUILD)/obj/frontend/onnx/% $(BUILD)/obj/tests/frontend/%,$(LIB_OBJ) $(TEST_OBJ)): | $(ONNX_GEN)/onnx.pb-c.h
endif

# The public API example (include/graft/graft.h).
$(BUILD)/examples/load_and_run: examples/load_and_run.c $(BUILD)/libgraft.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -g $(OPT) -Wall -Wextra -Iinclude $(CFLAGS) -o $@ $< $(BUILD)/libgraft.a $(EXT_LIBS) $(LDLIBS)

ifdef ART_GEN
$(ART_GEN)/graft_artifact.pb-c.c $(ART_GEN)/graft_artifact.pb-c.h &: deploy/graft_artifact.proto
	@mkdir -p $(ART_GEN)
	cp $< $(ART_GEN)/graft_artifact.proto
	cd $(ART_GEN) && protoc-c --c_out=. graft_artifact.proto
$(BUILD)/obj/gen/graft/graft_artifact.pb-c.o: $(ART_GEN)/graft_artifact.pb-c.c $(BUILD)/code_flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -c $< -o $@
$(filter $(BUILD)/obj/deploy/artifact% $(BUILD)/obj/tests/artifact/% $(BUILD)/obj/tools/cmd_build%,$(LIB_OBJ) $(TEST_OBJ) $(TOOL_OBJ)): | $(ART_GEN)/graft_artifact.pb-c.h
endif

# Tests run from the repository root (they read tests/golden/...). GRAFT tells them where the
# CLI is. Criterion's closing line counts the passes and failures; it exits 0 when tests skip,
# so each run writes a TAP report in which scripts/check_skips.sh names the skips (with CI=true,
# a skip that tests/skips_allowed.txt does not list for that run fails). TEST_FILTER picks tests
# by suite/test globs (default all).
# AVX2_TESTS, every suite that runs oneDNN or graft's own AVX2 kernels, run a second time capped
# to AVX2 (oneDNN reads ONEDNN_MAX_CPU_ISA once per process; the CLI the tests start inherits it):
# its kernels, layouts and post-ops differ from AVX-512's, and CI may get either CPU.
# When Apache TVM is installed (make tvm-oracle), TVM runs the TVM-suite cases first and the
# tests compare graft's partitions with its fresh results too (tests/byoc/test_tvm_suite.c).
TEST_FILTER ?= *
AVX2_TESTS ?= dnnl*/* conformance/backend_dnnl artifact/* concurrency/*dnnl* inspect/* qdq_cnn/* \
              inspect_cli/*_diff_dnnl profile/* backend_opt_cli/* toolkit/* xnnpack/mixed* diff_quant/against_ort* \
              stream_packs/* zoo_round_trip/*
space := $(subst ,, )
test_filter = --filter '@($(subst $(space),|,$(strip $(1))))'
TVM_PY = build/third_party/tvm
test: deps models
	@sh scripts/check_layers.sh
	@sh scripts/check_tree.sh
	@sh scripts/check_op_names.sh
	@$(MAKE) --no-print-directory all $(BUILD)/tests/run_tests
	@rm -rf $(BUILD)/tvm_suite
	@if [ -f $(TVM_PY)/.installed-0.27.0 ]; then \
	    PYTHONPATH=$(TVM_PY) python3 tests/tvm_suite/oracle.py $(BUILD)/tvm_suite --graft $(BUILD)/graft \
	        > $(BUILD)/tvm_oracle.log 2>&1 || { tail -30 $(BUILD)/tvm_oracle.log; echo "tvm oracle failed"; exit 1; }; \
	    tail -1 $(BUILD)/tvm_oracle.log; echo "tvm oracle: TVM 0.27's results in $(BUILD)/tvm_suite"; fi
	GRAFT=$(BUILD)/graft GRAFT_TVM_SUITE=$$([ -f $(BUILD)/tvm_suite/cases.txt ] && echo $(BUILD)/tvm_suite) \
	    $(BUILD)/tests/run_tests --tap=$(BUILD)/tests/unit.tap $(call test_filter,$(TEST_FILTER)) $(TEST_ARGS)
	@bash scripts/check_skips.sh $(BUILD)/tests/unit.tap unit '$(TEST_FILTER)'
	ONEDNN_MAX_CPU_ISA=AVX2 GRAFT=$(BUILD)/graft $(BUILD)/tests/run_tests --tap=$(BUILD)/tests/avx2.tap \
	    $(call test_filter,$(AVX2_TESTS))
	@bash scripts/check_skips.sh $(BUILD)/tests/avx2.tap avx2 '$(AVX2_TESTS)'
	@sh scripts/check_exports.sh $(BUILD)
	@sh scripts/check_public.sh $(BUILD)
	@bash scripts/check_docs.sh
	@$(MAKE) --no-print-directory pytest
	@$(MAKE) --no-print-directory triton-test
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_TEST_SECONDS)

tvm-oracle:
	sh scripts/tvm_oracle.sh

asan: deps models
	@$(MAKE) --no-print-directory BUILD=build/asan OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    build/asan/graft build/asan/tests/run_tests plugins
	bash scripts/asan_test.sh build/asan '$(TEST_FILTER)'

# The concurrency checks (one loaded model run from 4 threads) under ThreadSanitizer, as a plain
# program (Criterion's runner does not start under TSan).
tsan: deps
	@$(MAKE) --no-print-directory BUILD=build/tsan CC=clang OPT=-O1 \
	    SAN="-fsanitize=thread -fno-omit-frame-pointer" build/tsan/tests/concurrency
	bash scripts/tsan_test.sh build/tsan

$(BUILD)/tests/concurrency: tests/concurrency_main.c tests/artifact/concurrency_impl.h $(BUILD)/libgraft.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(BUILD)/libgraft.a $(EXT_LIBS) $(LDLIBS)

# libFuzzer targets (fuzz/fuzz_*.c), built with clang + ASan + UBSan in build/fuzz: every target
# runs FUZZ_SECONDS over seeds made from the golden files, the ONNX test data and artifacts this
# build makes; any crash, leak, UB or timeout fails. `make test` runs each briefly.
FUZZ_SECONDS ?= 600
FUZZ_TEST_SECONDS ?= 20
FUZZ_TARGETS = $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_SAN = -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
           -fno-omit-frame-pointer
fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	bash scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang OPT=-O1 SAN="$(FUZZ_SAN)" fuzz-bins

fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%) $(BUILD)/fuzz/seeds

$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_util.h $(BUILD)/libgraft.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libgraft.a $(EXT_LIBS) $(LDLIBS)

$(BUILD)/fuzz/seeds: fuzz/seeds.c $(BUILD)/libgraft.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(BUILD)/libgraft.a $(EXT_LIBS) $(LDLIBS)

demo: deps models
	@$(MAKE) --no-print-directory all
	bash scripts/demo.sh $(BUILD)/graft

bench: deps models
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@sh scripts/openvino_env.sh > /dev/null
	bash scripts/bench.sh $(BUILD)
	@$(MAKE) --no-print-directory triton-bench

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# Every shell command of README.md and docs/*.md, run against build/graft in a temporary
# directory (scripts/check_docs.sh; ```sh norun: REASON blocks are skipped).
.PHONY: check-docs
check-docs: all
	bash scripts/check_docs.sh

# The Python package (python/graft, docs/python.md): a virtual environment under
# build/third_party (numpy, pytest, onnxruntime from PyPI; never the system Python) with graft
# installed from this tree, then its pytest suite; the files with oneDNN results run a second
# time capped to AVX2, as the C tests do. `make wheel` builds a wheel into build/wheel.
PYVENV ?= build/third_party/pyvenv
PYTEST = $(abspath $(PYVENV))/bin/python -m pytest -q -p no:cacheprovider
PYTEST_ENV = cd python/tests && GRAFT=$(abspath $(BUILD))/graft
.PHONY: pytest wheel py-overhead
pytest: all
	@GRAFT_WERROR=$(if $(WERROR),1,) sh scripts/python_env.sh $(PYVENV) > /dev/null
	$(PYTEST_ENV) $(PYTEST) $(PYTEST_ARGS)
	$(PYTEST_ENV) ONEDNN_MAX_CPU_ISA=AVX2 $(PYTEST) -k 'dnnl or cls or rec or resnet or threads' \
	    test_api.py test_regression.py test_threads.py test_diff_ort.py $(PYTEST_ARGS)

wheel: all
	@sh scripts/python_env.sh $(PYVENV) > /dev/null
	$(PYVENV)/bin/python -m pip wheel --no-build-isolation --no-deps -w $(BUILD)/wheel .

# sess.run's cost over the C API's graft_model_run on a small model (docs/python.md).
py-overhead:
	@sh scripts/python_env.sh $(PYVENV) > /dev/null
	$(PYVENV)/bin/python python/tests/overhead.py

# Serving with Triton Inference Server (docs/serving.md): the graft backend, built as Triton
# lays out a backend (backends/graft/libtriton_graft.so with the libraries it needs beside it)
# against the public headers alone (include/graft, as the plugins),
# and its tests against the tritonserver that scripts/triton_env.sh installs from PyPI.
TRITON_BACKEND = $(BUILD)/triton/graft/libtriton_graft.so
.PHONY: triton-backend triton-test triton-bench
triton-backend: $(TRITON_BACKEND)
$(TRITON_BACKEND): serve/triton/graft_backend.c serve/triton/triton_api.h $(BUILD)/libgraft.so
	@mkdir -p $(dir $@)
	cp $(BUILD)/libgraft.so $(dir $@)libgraft.so
	$(CC) $(PLUGIN_CFLAGS) -MMD -MP $(CFLAGS) -shared -o $@ $< -L$(dir $@) -lgraft -ljansson \
	    -Wl,-rpath,'$$ORIGIN'
-include $(BUILD)/triton/graft/libtriton_graft.d

# The tests start tritonserver on 127.0.0.1 (free ports), check answers against `graft run` and
# stop it; a bounded load check with small counts. triton-bench is the full load table.
TRITON_VENV ?= build/third_party/tritonvenv
TRITON_TEST_REQUESTS ?= 32
triton-test: all $(TRITON_BACKEND)
	@sh scripts/triton_env.sh $(TRITON_VENV) > /dev/null
	timeout 1200 $(TRITON_VENV)/bin/python tests/triton/test_triton.py --build $(BUILD) \
	    --requests $(TRITON_TEST_REQUESTS)

triton-bench: all $(TRITON_BACKEND)
	@sh scripts/triton_env.sh $(TRITON_VENV) > /dev/null
	$(TRITON_VENV)/bin/python scripts/triton_load.py --build $(BUILD)
