# Shrinkwrap — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT        ?= swift
SWIFTC       ?= swiftc
VENV         := .venv
PY           := $(VENV)/bin/python
VENV_TF      := .venv-tf
BIN          := .build/release/shrinkwrap
PROTOBUF_VERSION := 1.39.0
TOOLS        := .build-tools
# protoc-gen-swift from the swift-protobuf checkout SwiftPM resolved for this package
# (exactly $(PROTOBUF_VERSION), pinned in Package.swift), built into our own .build so
# it shares the already compiled SwiftProtobuf module.
PROTOC_GEN_SWIFT := .build/release/protoc-gen-swift
TESTDATA     := .testdata

.PHONY: demo-release samples install help deps deps-browser venv venv-tf build test unit-tests crosscheck crosscheck-compression test-coreml-matrix test-gates crosscheck-sweep crosscheck-inputs test-html demo bench schemas schemas-check check-tflite-schema fuzz fuzz-flatbuffers fuzz-tflite crosscheck-tflite crosscheck-tflite-export crosscheck-onnx-export crosscheck-onnx-export-all testdata clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  make %-14s %s\n", $$1, $$2}'

# --- machine setup (idempotent) -------------------------------------------
APT_PACKAGES := libopenblas-dev protobuf-compiler libpng-dev libjpeg-dev flatbuffers-compiler

deps: ## install the Debian packages the build and tests use (idempotent)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

venv: $(VENV)/.stamp ## the Python venv with the peer tools (onnx, onnxruntime)
$(VENV)/.stamp: Scripts/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r Scripts/requirements.txt
	touch $@

venv-tf: $(VENV_TF)/.stamp ## a second venv with TensorFlow 2.12 + coremltools + tflite-support (Keras / TFLite fixtures; TF pins its own numpy)
$(VENV_TF)/.stamp: Scripts/requirements-tf.txt Scripts/requirements-tf-nodeps.txt
	python3 -m venv $(VENV_TF)
	$(VENV_TF)/bin/pip install -q --disable-pip-version-check -r Scripts/requirements-tf.txt
	$(VENV_TF)/bin/pip install -q --disable-pip-version-check --no-deps -r Scripts/requirements-tf-nodeps.txt
	touch $@

build: ## release build of the shrinkwrap binary
	$(SWIFT) build -c release --product shrinkwrap

# --- schemas ----------------------------------------------------------------
$(PROTOC_GEN_SWIFT): Package.swift
	grep -q 'swift-protobuf", exact: "$(PROTOBUF_VERSION)"' Package.swift || { echo "Package.swift does not pin swift-protobuf $(PROTOBUF_VERSION)"; exit 1; }
	$(SWIFT) build -c release --product protoc-gen-swift

schemas: deps $(PROTOC_GEN_SWIFT) ## regenerate the committed Swift code from Schemas/
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=Sources/ONNXSchema -I Schemas/onnx Schemas/onnx/onnx.proto
	rm -f Sources/CoreMLSchema/*.pb.swift
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=Sources/CoreMLSchema -I Schemas/coreml Schemas/coreml/*.proto
	python3 Scripts/gen_tflite_tables.py Schemas/tflite/tflite.fbs Sources/ShrinkwrapTFLite/TFLiteSchemaTables.generated.swift

schemas-check: deps venv $(PROTOC_GEN_SWIFT) ## prove the committed generated code is current and the schemas match onnx's and coremltools'
	rm -rf $(TOOLS)/gen && mkdir -p $(TOOLS)/gen
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=$(TOOLS)/gen -I Schemas/onnx Schemas/onnx/onnx.proto
	diff -u Sources/ONNXSchema/onnx.pb.swift $(TOOLS)/gen/onnx.pb.swift && echo "schemas: generated code is current"
	$(PY) Scripts/check_onnx_schema.py Schemas/onnx/onnx.proto
	rm -rf $(TOOLS)/gen-coreml && mkdir -p $(TOOLS)/gen-coreml
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=$(TOOLS)/gen-coreml -I Schemas/coreml Schemas/coreml/*.proto
	diff -ru -x README.md Sources/CoreMLSchema $(TOOLS)/gen-coreml && echo "schemas: generated Core ML code is current"
	$(PY) Scripts/check_coreml_schema.py Schemas/coreml
	python3 Scripts/gen_tflite_tables.py Schemas/tflite/tflite.fbs $(TOOLS)/TFLiteSchemaTables.generated.swift
	diff -u Sources/ShrinkwrapTFLite/TFLiteSchemaTables.generated.swift $(TOOLS)/TFLiteSchemaTables.generated.swift && echo "schemas: generated TFLite tables are current"

# Our TFLite schema subset: flatc must accept it, and every id / name / type /
# default / enum value must match the schema TensorFlow ships (schema_py_generated.py).
# The metadata schema likewise against tflite-support's metadata_schema_py_generated.py (flatc --no-warnings:
# upstream's field sentencePiece_model is not snake_case, and we keep upstream's names).
check-tflite-schema: deps venv-tf ## check Schemas/tflite/{tflite,metadata_schema}.fbs with flatc and against TF's / tflite-support's own
	rm -rf $(TOOLS)/tflite-cpp && mkdir -p $(TOOLS)/tflite-cpp
	flatc --cpp -o $(TOOLS)/tflite-cpp Schemas/tflite/tflite.fbs && echo "flatc accepts Schemas/tflite/tflite.fbs"
	$(VENV_TF)/bin/python Scripts/check_tflite_schema.py Schemas/tflite/tflite.fbs
	flatc --cpp --no-warnings -o $(TOOLS)/tflite-cpp Schemas/tflite/metadata_schema.fbs && echo "flatc accepts Schemas/tflite/metadata_schema.fbs"
	$(VENV_TF)/bin/python Scripts/check_tflite_schema.py Schemas/tflite/metadata_schema.fbs --official \
	  "$$($(VENV_TF)/bin/python -c 'import os, tensorflow_lite_support.metadata as m; print(os.path.join(os.path.dirname(m.__file__), "metadata_schema_py_generated.py"))')"

# --- fuzzing (libFuzzer + AddressSanitizer; outside SwiftPM) ---------------------
FUZZ_DIR  := .build/fuzz
FUZZ_RUNS ?= 1000000
FUZZ_LINK ?= -use-ld=lld   # gold prints thousands of harmless ASan "Cannot export local symbol" warnings

fuzz: fuzz-flatbuffers fuzz-tflite ## run every fuzzer, FUZZ_RUNS (1 M) executions each

$(FUZZ_DIR)/flatbuffers-fuzz: Fuzz/FlatBuffersFuzz/main.swift $(wildcard Sources/FlatBuffers/*.swift)
	mkdir -p $(FUZZ_DIR)
	$(SWIFTC) -O -sanitize=fuzzer,address -parse-as-library -module-name FlatBuffersFuzz $(FUZZ_LINK) \
	  Sources/FlatBuffers/*.swift Fuzz/FlatBuffersFuzz/main.swift -o $@

fuzz-flatbuffers: deps $(FUZZ_DIR)/flatbuffers-fuzz ## fuzz the FlatBuffers reader for FUZZ_RUNS executions (seeds: flatc from JSON)
	rm -rf $(FUZZ_DIR)/flatbuffers-seeds && mkdir -p $(FUZZ_DIR)/flatbuffers-seeds $(FUZZ_DIR)/flatbuffers-corpus
	flatc -b -o $(FUZZ_DIR)/flatbuffers-seeds Schemas/tflite/tflite.fbs Fuzz/FlatBuffersFuzz/seeds/*.json
	flatc -b -o $(FUZZ_DIR)/flatbuffers-seeds Tests/FlatBuffersTests/Fixtures/test.fbs Tests/FlatBuffersTests/Fixtures/root.json
	SWIFT_BACKTRACE=enable=no $(FUZZ_DIR)/flatbuffers-fuzz -runs=$(FUZZ_RUNS) -timeout=10 -rss_limit_mb=2048 \
	  -artifact_prefix=$(FUZZ_DIR)/flatbuffers- $(FUZZ_DIR)/flatbuffers-corpus $(FUZZ_DIR)/flatbuffers-seeds

# The TFLite importer as one module: IR + FlatBuffers + ZipArchive + TFLite sources without their cross-module imports
# (so the metadata reader and the appended ZIP of associated files are fuzzed with the model).
TFLITE_FUZZ_SOURCES := $(wildcard Sources/ShrinkwrapIR/*.swift Sources/FlatBuffers/*.swift Sources/ZipArchive/*.swift Sources/ShrinkwrapTFLite/*.swift)
$(FUZZ_DIR)/tflite-fuzz: Fuzz/TFLiteImportFuzz/main.swift $(TFLITE_FUZZ_SOURCES)
	rm -rf $(FUZZ_DIR)/tflite-src && mkdir -p $(FUZZ_DIR)/tflite-src
	for f in $(TFLITE_FUZZ_SOURCES); do \
	  sed -e '/^import ShrinkwrapIR$$/d' -e '/^import FlatBuffers$$/d' -e '/^import ZipArchive$$/d' $$f > $(FUZZ_DIR)/tflite-src/$$(basename $$(dirname $$f))_$$(basename $$f); done
	$(SWIFTC) -O -sanitize=fuzzer,address -parse-as-library -module-name TFLiteImportFuzz $(FUZZ_LINK) \
	  $(FUZZ_DIR)/tflite-src/*.swift Fuzz/TFLiteImportFuzz/main.swift -o $@

fuzz-tflite: deps $(FUZZ_DIR)/tflite-fuzz ## fuzz the TFLite importer for FUZZ_RUNS executions (seeds: flatc models, converter fixtures)
	rm -rf $(FUZZ_DIR)/tflite-seeds && mkdir -p $(FUZZ_DIR)/tflite-seeds $(FUZZ_DIR)/tflite-corpus
	flatc -b -o $(FUZZ_DIR)/tflite-seeds Schemas/tflite/tflite.fbs Fuzz/FlatBuffersFuzz/seeds/*.json
	-cp $(TESTDATA)/tflite/*.tflite $(FUZZ_DIR)/tflite-seeds/ 2>/dev/null
	-cp $(TESTDATA)/tflite-metadata/*.tflite $(FUZZ_DIR)/tflite-seeds/ 2>/dev/null
	SWIFT_BACKTRACE=enable=no $(FUZZ_DIR)/tflite-fuzz -runs=$(FUZZ_RUNS) -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
	  -artifact_prefix=$(FUZZ_DIR)/tflite- $(FUZZ_DIR)/tflite-corpus $(FUZZ_DIR)/tflite-seeds

# --- test data (generated, git-ignored) --------------------------------------
TESTDATA_STAMP := $(TESTDATA)/.stamp

KERAS_STAMP := $(TESTDATA)/keras/manifest.json
TFLITE_STAMP := $(TESTDATA)/tflite/manifest.json
TFLITE_META_STAMP := $(TESTDATA)/tflite-metadata/fixtures.json

testdata: $(TESTDATA_STAMP) $(KERAS_STAMP) $(TFLITE_STAMP) $(TFLITE_META_STAMP) ## generate the ONNX node suite, model suites, Keras → Core ML and TensorFlow Lite fixtures (incl. tflite-support metadata, an ML Kit bundle) into .testdata/
$(TESTDATA_STAMP): Scripts/gen_onnx_node_tests.py Scripts/materialize_light.py Scripts/packing_vectors.py $(VENV)/.stamp
	$(PY) Scripts/gen_onnx_node_tests.py $(TESTDATA)/onnx-node 2>/dev/null
	$(PY) Scripts/materialize_light.py $(TESTDATA)/models >/dev/null
	$(PY) Scripts/packing_vectors.py $(TESTDATA)/packing-vectors.json
	touch $@
$(KERAS_STAMP): Scripts/make_keras_coreml.py $(VENV_TF)/.stamp
	rm -rf $(TESTDATA)/keras
	$(VENV_TF)/bin/python Scripts/make_keras_coreml.py $(TESTDATA)/keras >/dev/null 2>&1 || \
	  { $(VENV_TF)/bin/python Scripts/make_keras_coreml.py $(TESTDATA)/keras; exit 1; }
$(TFLITE_STAMP): Scripts/make_tflite_fixtures.py $(VENV_TF)/.stamp
	rm -rf $(TESTDATA)/tflite
	$(VENV_TF)/bin/python Scripts/make_tflite_fixtures.py $(TESTDATA)/tflite >/dev/null 2>&1 || \
	  { $(VENV_TF)/bin/python Scripts/make_tflite_fixtures.py $(TESTDATA)/tflite; exit 1; }
$(TFLITE_META_STAMP): Scripts/make_tflite_metadata_fixtures.py Scripts/make_tflite_fixtures.py $(VENV_TF)/.stamp
	rm -rf $(TESTDATA)/tflite-metadata
	$(VENV_TF)/bin/python Scripts/make_tflite_metadata_fixtures.py $(TESTDATA)/tflite-metadata >/dev/null 2>&1 || \
	  { $(VENV_TF)/bin/python Scripts/make_tflite_metadata_fixtures.py $(TESTDATA)/tflite-metadata; exit 1; }

# --- tests ------------------------------------------------------------------
# Tests run in release mode: the suites execute real CNNs.
SWIFT_TEST := $(SWIFT) test -c release -Xswiftc -enable-testing

test: deps venv testdata schemas-check build ## build, run every test suite and the onnxruntime cross-check
	$(SWIFT_TEST) 2>&1 | tee $(TESTDATA)/swift-test.log | grep -E "^(FAIL|onnx |Test Case .*failed|error:|.*Executed [0-9]+ tests)|passed, .*excluded|: error:" ; \
	  exit $${PIPESTATUS[0]}
	$(MAKE) --no-print-directory crosscheck
	$(MAKE) --no-print-directory check-tflite-schema crosscheck-tflite crosscheck-tflite-export crosscheck-onnx-export test-gates crosscheck-sweep crosscheck-inputs test-html
	@echo "make test: all suites passed"

unit-tests: ## only the Swift test suites (no schema check, no cross-check)
	$(SWIFT_TEST)

crosscheck: deps venv testdata build ## onnxruntime vs shrinkwrap on every light model (rel diff <= 1e-4)
	@echo "== onnxruntime cross-check: light models as shipped (arange input) =="
	$(PY) Scripts/ort_crosscheck.py --shrinkwrap $(BIN) --arange $(TESTDATA)/onnx-models/light/*/model.onnx
	@echo "== onnxruntime cross-check: light models with materialized random weights (random input) =="
	$(PY) Scripts/ort_crosscheck.py --shrinkwrap $(BIN) $(TESTDATA)/models/*.onnx
	@echo "== coremltools cross-check: k-means SSE, light_squeezenet, 8/4/2/1 bits (ours must not be worse) =="
	$(PY) Scripts/coremltools_compress.py --shrinkwrap $(BIN) --check-sse --modes kmeans-lut --bits 8,4,2,1 $(TESTDATA)/models/light_squeezenet.onnx
	@echo "== coremltools cross-check: every .mlmodel the Core ML suites wrote loads, and every compressed weight decodes bit-identically =="
	$(PY) Scripts/coreml_crosscheck.py $(TESTDATA)/coreml-crosscheck 2>&1 | grep -v "Failed to load _MLModelProxy\|scikit-learn version"; exit $${PIPESTATUS[0]}

test-coreml-matrix: deps venv testdata build ## ONNX → .mlmodel → import round trip: every light model × 3 modes × 1–8 bits (~1 h)
	SHRINKWRAP_FULL_MATRIX=1 $(SWIFT_TEST) --filter CoreMLRoundTripTests.testFullMatrix 2>&1 | grep -E "full matrix|error|failed|Executed"; \
	  exit $${PIPESTATUS[0]}

crosscheck-compression: deps venv testdata build ## k-means SSE vs coremltools on light_resnet50 + light_squeezenet, 8/4/2/1 bits (~15 min)
	$(PY) Scripts/coremltools_compress.py --shrinkwrap $(BIN) --check-sse --modes kmeans-lut --bits 8,4,2,1 \
	  $(TESTDATA)/models/light_squeezenet.onnx $(TESTDATA)/models/light_resnet50.onnx

# --- demo and bench ---------------------------------------------------------
DEMO_MODEL := $(TESTDATA)/models/light_squeezenet.onnx

samples: venv-tf ## retrain the sample models into Samples/ (TensorFlow venv; tf2onnx, coremltools, tflite-support)
	$(VENV_TF)/bin/python Samples/train/train_linear.py Samples/linear
	$(VENV_TF)/bin/python Samples/train/train_digits.py Samples/digits
	$(VENV_TF)/bin/python Samples/train/train_sentiment.py Samples/sentiment

PREFIX ?= /usr/local
install: build ## install the shrinkwrap binary into $(PREFIX)/bin (make install PREFIX=~/.local)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/shrinkwrap

# The release pipeline of Samples/release/Makefile, run on the digits and sentiment samples
# (a staging folder of models + data, copied with their dates so that reruns are incremental).
demo-release: build ## the sample release pipeline: compress, gate on agreement, collect reports (make -j safe)
	mkdir -p out/release-demo/models out/release-demo/data/digits out/release-demo/data/sentiment
	cp -p Samples/digits/digits.tflite Samples/sentiment/sentiment.tflite out/release-demo/models/
	cp -p Samples/digits/images/*.png out/release-demo/data/digits/
	cp -p Samples/sentiment/sentences.txt out/release-demo/data/sentiment/
	$(MAKE) --no-print-directory -C out/release-demo -f $(CURDIR)/Samples/release/Makefile SHRINKWRAP=$(abspath $(BIN)) MIN_AGREEMENT=90

demo: deps venv testdata build ## inspect and run a sample model, then sweep its compression (reports in out/demo)
	$(BIN) inspect $(DEMO_MODEL)
	mkdir -p out/demo
	$(PY) -c "import numpy as np; np.save('out/demo/input.npy', np.random.default_rng(0).random((1,3,224,224), dtype=np.float32))"
	$(BIN) run $(DEMO_MODEL) --input out/demo/input.npy --output-dir out/demo
	$(MAKE) --no-print-directory out/demo/sweep.md

# 32 image-like inputs (uniform noise until the bundled samples land), one .npy each.
out/demo/data/.stamp: Scripts/make_npy_inputs.py | venv
	$(PY) Scripts/make_npy_inputs.py out/demo/data --count 32 --shape 1,3,224,224 --seed 0
	touch $@

out/demo/sweep.md: $(DEMO_MODEL) out/demo/data/.stamp $(BIN)
	$(BIN) sweep $(DEMO_MODEL) --data out/demo/data --report out/demo/sweep.json --report out/demo/sweep.csv \
	  --report out/demo/sweep.html --report $@.tmp.md --dump-weights out/demo/weights
	mv $@.tmp.md $@

# The quality gates' exit codes: 0 when met, 3 when not (after the report is written).
test-gates: deps venv testdata build out/demo/data/.stamp
	$(BIN) compare $(DEMO_MODEL) $(DEMO_MODEL) --data out/demo/data --min-agreement 100 --min-cosine 0.999999 --quiet
	@$(BIN) compare $(DEMO_MODEL) $(DEMO_MODEL) --data out/demo/data --min-psnr 1000 --report out/demo/gate.json --quiet; \
	  code=$$?; test $$code -eq 0 || { echo "identical models failed a PSNR gate (exit $$code)"; exit 1; }
	@$(BIN) sweep $(DEMO_MODEL) --data out/demo/data --modes linear --bits 1 --min-agreement 100 --report out/demo/gate-sweep.json --quiet > /dev/null; \
	  code=$$?; test $$code -eq 3 || { echo "expected exit 3 from an unmet sweep gate, got $$code"; exit 1; }; \
	  test -s out/demo/gate-sweep.json || { echo "the gate did not write its report first"; exit 1; }
	@$(BIN) compare $(DEMO_MODEL) $(DEMO_MODEL) --data out/demo/data --min-agrement 1 > /dev/null 2>&1; \
	  code=$$?; test $$code -ne 0 -a $$code -ne 3 || { echo "a usage error must not look like a gate failure (exit $$code)"; exit 1; }
	$(BIN) convert $(DEMO_MODEL) -o out/demo/gate-8.mlmodel --mode linear --bits 8 --data out/demo/data --min-agreement 99 \
	  --report out/demo/gate-8.md > /dev/null
	@rm -f out/demo/gate-1.mlmodel*; $(BIN) convert $(DEMO_MODEL) -o out/demo/gate-1.mlmodel --mode linear --bits 1 --data out/demo/data \
	  --min-agreement 100 > /dev/null 2>&1; code=$$?; test $$code -eq 3 || { echo "expected exit 3 from convert's unmet gate, got $$code"; exit 1; }; \
	  test ! -e out/demo/gate-1.mlmodel -a -s out/demo/gate-1.mlmodel.rejected || \
	  { echo "a rejected model must move aside (.rejected) so make does not take it for done"; exit 1; }
	@echo "test-gates: exit codes 0 / 3 / usage as documented"

# onnxruntime re-derives the agreement of two sweep variants from the dumped weights.
crosscheck-sweep: out/demo/sweep.md
	$(PY) Scripts/sweep_crosscheck.py --model $(DEMO_MODEL) --data out/demo/data --report out/demo/sweep.json \
	  --weights out/demo/weights --variants linear-4,kmeans-lut-2,linear-lut-1

# tf.lite.Interpreter vs shrinkwrap on every converter-made .tflite (float32 / fp16 / dynamic-range int8 and
# one model per builtin), then the real models and the convolution ops again through .mlmodel.
crosscheck-tflite: deps venv testdata build ## TFLite interpreter vs ours on converter-made .tflite files, directly and via .mlmodel
	$(PY) Scripts/tflite_crosscheck.py --shrinkwrap $(BIN) --fixtures $(TESTDATA)/tflite
	$(PY) Scripts/tflite_crosscheck.py --shrinkwrap $(BIN) --fixtures $(TESTDATA)/tflite --via mlmodel \
	  --only 'cnn.*' --only 'mlp.*' --only 'text.*' --only 'lstm.float32.*' --only 'lstm.int8.*' --only 'op_conv*' \
	  --only 'op_depthwise*' --only 'op_transpose_conv*' --only 'op_*pool*' --only 'op_fully_connected*' --only 'op_slice*'

# .tflite files we write (float32, fp16, int8 dynamic range) run in tf.lite.Interpreter like in ours; converter files survive the round trip.
TFLITE_EXPORT_MODELS := $(addprefix $(TESTDATA)/models/light_,squeezenet.onnx shufflenet.onnx inception_v1.onnx inception_v2.onnx densenet121.onnx resnet50.onnx)
# One-op files (op_*) run float32 only: their fp16 / int8 weights go through the same weight
# writer the model fixtures (cnn, mlp, text, lstm) and the light models check in all three modes.
crosscheck-tflite-export: deps venv-tf testdata build ## tf.lite.Interpreter vs ours on the .tflite files we export (fixtures + light models × float / fp16 / int8)
	$(VENV_TF)/bin/python Scripts/tflite_export_crosscheck.py --shrinkwrap $(BIN) --fixtures $(TESTDATA)/tflite $(TFLITE_EXPORT_MODELS) $(TESTDATA)/tflite-metadata/*.tflite \
	  --fixture-modes float --fixture-modes-only "op_*" \
	  --skip "op_squeeze.float32.tflite=its input has a free inner dimension; the exporter needs fixed shapes beyond the batch axis"

# Every storage form the ONNX writer has: float32 round trip, fp16, int8 / uint8 per tensor and
# per channel, int4 per channel, per block (integer and fractional zero points), bit-packed
# 1/2/3/5/6/7-bit codes and indices, uint4 palettes, grouped palettes.
ONNX_EXPORT_MODES := float,fp16,linear8,linear8-sym,linear4-channel,linear4-block32,linear4-block32-sym,linear7,linear2,linear-lut4,linear-lut1,kmeans-lut3,kmeans-lut4-grouped,kmeans-lut6
ONNX_EXPORT_MODELS := $(addprefix $(TESTDATA)/models/light_,squeezenet.onnx shufflenet.onnx)
LIGHT_MODELS := $(wildcard $(TESTDATA)/models/light_*.onnx)
crosscheck-onnx-export: deps venv testdata build ## onnx.checker + onnxruntime vs ours on the .onnx files we export (2 light models × every storage form)
	$(PY) Scripts/onnx_export_crosscheck.py --shrinkwrap $(BIN) --modes $(ONNX_EXPORT_MODES) $(ONNX_EXPORT_MODELS)

crosscheck-onnx-export-all: deps venv testdata build ## the same for every light model × float, fp16 and every mode at 1-8 bits (~1 h)
	$(PY) Scripts/onnx_export_crosscheck.py --shrinkwrap $(BIN) --modes all $(LIGHT_MODELS)

# Images and text become the tensors Pillow + NumPy and Model Maker's tokenizer give (bit for bit).
crosscheck-inputs: deps venv build ## image preprocessing vs Pillow, text tokenization vs Model Maker's rules
	$(PY) Scripts/inputs_crosscheck.py --shrinkwrap $(BIN)

# The HTML report rendered by headless Chromium and checked (plot series visible, warning banner, no external assets).
# Chromium is optional (`make deps-browser`); without it the check is skipped, and says so.
test-html: out/demo/sweep.md ## screenshot the demo's HTML report in headless Chromium (skipped, loudly, without Chromium)
	@$(PY) Scripts/html_screenshot.py --html out/demo/sweep.html --png out/demo/sweep.png; code=$$?; \
	  if [ $$code -eq 2 ]; then echo "*** test-html SKIPPED: Chromium is not installed (make deps-browser installs it) ***"; \
	  elif [ $$code -ne 0 ]; then exit $$code; fi

deps-browser: ## install Chromium for the HTML screenshot check (optional, ~300 MB)
	@dpkg -s chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

bench: deps venv testdata build ## inference ms vs onnxruntime; compression seconds vs coremltools; a full sweep (~15 min)
	$(PY) Scripts/bench.py --shrinkwrap $(BIN) --runs 20 --threads 2 $(TESTDATA)/models/light_resnet50.onnx $(TESTDATA)/models/light_squeezenet.onnx
	@echo "== compressing every weight of light_resnet50: shrinkwrap vs coremltools, same tensors, same run =="
	$(PY) Scripts/coremltools_compress.py --shrinkwrap $(BIN) --threads 2 --modes fp16,linear,linear-lut,kmeans-lut --bits 8,4 \
	  $(TESTDATA)/models/light_resnet50.onnx
	@echo "== a full sweep: fp16 + 3 modes x 8/4/2/1 bits, agreement over 200 inputs, light_squeezenet =="
	$(PY) Scripts/make_npy_inputs.py out/bench/data --count 200 --shape 1,3,224,224 --seed 1
	@start=$$(date +%s.%N); $(BIN) sweep $(DEMO_MODEL) --data out/bench/data --quiet --report out/bench/sweep.json > out/bench/sweep.md && \
	  end=$$(date +%s.%N) && echo "sweep of light_squeezenet (13 variants, 200 inputs): $$($(PY) -c "print(round($$end - $$start, 1))") s wall" && head -12 out/bench/sweep.md

clean: ## remove build products, generated test data and reports
	rm -rf .build $(TOOLS) $(TESTDATA) out
