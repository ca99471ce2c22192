# Shrinkwrap — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT        ?= swift
VENV         := .venv
PY           := $(VENV)/bin/python
VENV_TF      := .venv-tf
BIN          := .build/release/shrinkwrap
PROTOBUF_VERSION := 1.39.0
TOOLS        := .build-tools
PROTOC_GEN_SWIFT := $(TOOLS)/swift-protobuf/.build/release/protoc-gen-swift
TESTDATA     := .testdata

.PHONY: help deps venv venv-tf build test unit-tests crosscheck crosscheck-compression test-coreml-matrix demo bench schemas schemas-check testdata clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  make %-14s %s\n", $$1, $$2}'

# --- machine setup (idempotent) -------------------------------------------
APT_PACKAGES := libopenblas-dev protobuf-compiler

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

venv-tf: $(VENV_TF)/.stamp ## a second venv with TensorFlow 2.12 + coremltools (Keras fixtures; TF pins its own numpy)
$(VENV_TF)/.stamp: Scripts/requirements-tf.txt
	python3 -m venv $(VENV_TF)
	$(VENV_TF)/bin/pip install -q --disable-pip-version-check -r Scripts/requirements-tf.txt
	touch $@

build: ## release build of the shrinkwrap binary
	$(SWIFT) build -c release --product shrinkwrap

# --- schemas ----------------------------------------------------------------
$(PROTOC_GEN_SWIFT):
	mkdir -p $(TOOLS)
	[ -d $(TOOLS)/swift-protobuf ] || git clone -q --depth 1 --branch $(PROTOBUF_VERSION) https://github.com/apple/swift-protobuf $(TOOLS)/swift-protobuf
	cd $(TOOLS)/swift-protobuf && $(SWIFT) build -c release --product protoc-gen-swift

schemas: deps $(PROTOC_GEN_SWIFT) ## regenerate the committed Swift code from Schemas/
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=Sources/ONNXSchema -I Schemas/onnx Schemas/onnx/onnx.proto
	rm -f Sources/CoreMLSchema/*.pb.swift
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=Sources/CoreMLSchema -I Schemas/coreml Schemas/coreml/*.proto

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

# --- test data (generated, git-ignored) --------------------------------------
TESTDATA_STAMP := $(TESTDATA)/.stamp

KERAS_STAMP := $(TESTDATA)/keras/manifest.json

testdata: $(TESTDATA_STAMP) $(KERAS_STAMP) ## generate the ONNX node suite, model suites and Keras → Core ML fixtures into .testdata/
$(TESTDATA_STAMP): Scripts/gen_onnx_node_tests.py Scripts/materialize_light.py Scripts/packing_vectors.py $(VENV)/.stamp
	$(PY) Scripts/gen_onnx_node_tests.py $(TESTDATA)/onnx-node 2>/dev/null
	$(PY) Scripts/materialize_light.py $(TESTDATA)/models >/dev/null
	$(PY) Scripts/packing_vectors.py $(TESTDATA)/packing-vectors.json
	touch $@
$(KERAS_STAMP): Scripts/make_keras_coreml.py $(VENV_TF)/.stamp
	rm -rf $(TESTDATA)/keras
	$(VENV_TF)/bin/python Scripts/make_keras_coreml.py $(TESTDATA)/keras >/dev/null 2>&1 || \
	  { $(VENV_TF)/bin/python Scripts/make_keras_coreml.py $(TESTDATA)/keras; exit 1; }

# --- tests ------------------------------------------------------------------
# Tests run in release mode: the suites execute real CNNs.
SWIFT_TEST := $(SWIFT) test -c release -Xswiftc -enable-testing

test: deps venv testdata schemas-check build ## build, run every test suite and the onnxruntime cross-check
	$(SWIFT_TEST) 2>&1 | tee $(TESTDATA)/swift-test.log | grep -E "^(FAIL|onnx |Test Case .*failed|error:|.*Executed [0-9]+ tests)|passed, .*excluded|: error:" ; \
	  exit $${PIPESTATUS[0]}
	$(MAKE) --no-print-directory crosscheck
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

demo: deps venv testdata build ## inspect and run a sample model
	$(BIN) inspect $(DEMO_MODEL)
	mkdir -p out/demo
	$(PY) -c "import numpy as np; np.save('out/demo/input.npy', np.random.default_rng(0).random((1,3,224,224), dtype=np.float32))"
	$(BIN) run $(DEMO_MODEL) --input out/demo/input.npy --output-dir out/demo

bench: deps venv testdata build ## inference ms vs onnxruntime; compression seconds vs coremltools (light_resnet50; ~10 min)
	$(PY) Scripts/bench.py --shrinkwrap $(BIN) --runs 20 --threads 2 $(TESTDATA)/models/light_resnet50.onnx $(TESTDATA)/models/light_squeezenet.onnx
	@echo "== compressing every weight of light_resnet50: shrinkwrap vs coremltools, same tensors, same run =="
	$(PY) Scripts/coremltools_compress.py --shrinkwrap $(BIN) --threads 2 --modes fp16,linear,linear-lut,kmeans-lut --bits 8,4 \
	  $(TESTDATA)/models/light_resnet50.onnx

clean: ## remove build products, generated test data and reports
	rm -rf .build $(TOOLS) $(TESTDATA) out
