# Shrinkwrap — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT        ?= swift
VENV         := .venv
PY           := $(VENV)/bin/python
BIN          := .build/release/shrinkwrap
PROTOBUF_VERSION := 1.39.0
TOOLS        := .build-tools
PROTOC_GEN_SWIFT := $(TOOLS)/swift-protobuf/.build/release/protoc-gen-swift
TESTDATA     := .testdata

.PHONY: help deps venv build test demo bench schemas schemas-check testdata clean

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

schemas-check: deps $(PROTOC_GEN_SWIFT) ## prove the committed generated code is current
	rm -rf $(TOOLS)/gen && mkdir -p $(TOOLS)/gen
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_opt=Visibility=Public \
	  --swift_out=$(TOOLS)/gen -I Schemas/onnx Schemas/onnx/onnx.proto
	diff -u Sources/ONNXSchema/onnx.pb.swift $(TOOLS)/gen/onnx.pb.swift && echo "schemas: generated code is current"
