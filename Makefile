# mkc - one Makefile for the whole tree.  Output goes to build/ (or $(B)).
#
#   make            build mkc, mkrun, libmk (static and shared)
#   make test       CI suite, then again under address+undefined sanitizers
#   make run        check and compile a sample; run it (GPU if any, else --cpu)
#   make gpu-test   GPU checks (needs an H200 / sm_90 GPU)
#   make bench      benchmarks (GPU)
#   make fuzz       libFuzzer over the front end for FUZZ_SECONDS
#   make test-random     the random-program test for RANDOM_SECONDS (1800)
#   make update-golden   regenerate golden files on purpose
#   make install PREFIX=/usr/local

B        ?= build
CC       ?= cc
CUDA_HOME ?= /usr/local/cuda
PREFIX   ?= /usr/local
WERROR   ?= 0
SAN      ?=
FUZZ_SECONDS ?= 60
VERSION  := 0.1.0

WARN   := -std=c11 -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
          -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN   += -Werror
endif
CPPFLAGS += -D_GNU_SOURCE -DMK_VERSION='"$(VERSION)"' -I. -I$(B)/gen -isystem $(CUDA_HOME)/include
CFLAGS   ?= -O2 -g
override CFLAGS += $(WARN) -fPIC $(SAN)
override LDFLAGS += $(SAN)
LDLIBS   += -ldl -lm -lpthread

GEN_C    := $(B)/gen/lex.c $(B)/gen/parse.c $(B)/gen/mkd_embed.c $(B)/gen/devices_embed.c
LIB_SRC  := $(wildcard base/*.c) $(wildcard grammar/*.c) \
            $(wildcard compiler/*.c) \
            $(wildcard codegen/*.c) \
            $(wildcard runtime/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o) $(GEN_C:.c=.o)
MKD_HDR  := $(sort $(wildcard codegen/mkd/*.cuh))
DEV_TXT  := $(sort $(wildcard tools/devices/*.txt))
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
GPU_SRC  := $(wildcard tests/gpu/*.c)
GPU_BIN  := $(GPU_SRC:tests/gpu/%.c=$(B)/tests/%)

.PHONY: all test test-once test-random run gpu-test bench fuzz update-golden install clean deps
all: $(B)/mkc $(B)/mkrun $(B)/libmk.a $(B)/libmk.so $(B)/embed $(UNIT_BIN) $(GPU_BIN)

deps:
	@sh tools/deps.sh

$(B)/gen/lex.c $(B)/gen/lex.h &: grammar/lex.l | $(B)/gen/.stamp
	flex --outfile=$(B)/gen/lex.c --header-file=$(B)/gen/lex.h $<
$(B)/gen/parse.c $(B)/gen/parse.h &: grammar/parse.y | $(B)/gen/.stamp
	bison -Wall -Werror --defines=$(B)/gen/parse.h -o $(B)/gen/parse.c $<
$(B)/gen/mkd_embed.c: $(MKD_HDR) $(B)/tools/embed | $(B)/gen/.stamp
	$(B)/tools/embed $(MKD_HDR) > $@.tmp && mv $@.tmp $@
$(B)/gen/devices_embed.c: $(DEV_TXT) $(B)/tools/embed | $(B)/gen/.stamp
	$(B)/tools/embed --devices $(DEV_TXT) > $@.tmp && mv $@.tmp $@
$(B)/tools/embed: tools/embed.c | $(B)/tools/.stamp
	$(CC) -std=c11 -O1 -o $@ $<

# Generated parser and lexer: no -Werror on code we do not write.
$(B)/gen/lex.o: $(B)/gen/parse.h
$(B)/gen/%.o: $(B)/gen/%.c
	$(CC) $(CPPFLAGS) $(filter-out -Werror -Wmissing-prototypes -Wshadow,$(CFLAGS)) -c -o $@ $<
$(B)/%.o: %.c $(B)/gen/parse.h $(B)/gen/lex.h | $(B)/.dirs
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# libmk.so exports only the functions runtime/mk.h marks MK_API (checked by
# tests/sh/exports.sh); the static library and the programs linked with it
# still reach everything.
$(LIB_OBJ): override CFLAGS += -fvisibility=hidden

$(B)/libmk.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(B)/libmk.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libmk.so.0 $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/mkc: $(B)/cmd/mkc.o $(B)/libmk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/mkrun: $(B)/cmd/mkrun.o $(B)/libmk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/embed: samples/embed.c $(B)/libmk.a
	$(CC) $(CPPFLAGS) -Iruntime $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/%: tests/unit/%.c $(B)/libmk.a | $(B)/tests/.stamp
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/%: tests/gpu/%.c $(B)/libmk.a | $(B)/tests/.stamp
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

%/.stamp:
	@mkdir -p $(dir $@) && touch $@
$(B)/.dirs:
	@mkdir -p $(B)/base $(B)/grammar $(B)/compiler $(B)/codegen $(B)/runtime $(B)/cmd $(B)/gen && touch $@

# ---- tests -----------------------------------------------------------------
# test-once runs the suite against one build; test runs it twice, the second
# time built with address and undefined-behaviour sanitizers, and prints one
# combined last line.
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory B=build/asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" CFLAGS="-O1 -g" all
	@sh tests/run.sh build build/asan

test-once: all
	@sh tests/run.sh $(B)

RANDOM_SECONDS ?= 1800
test-random: all
	@MKC=$(B)/mkc MKRUN=$(B)/mkrun MK_RANDPROG_SECONDS=$(RANDOM_SECONDS) \
		python3 tests/tools/random_programs.py

update-golden: all
	@MK_UPDATE_GOLDEN=1 sh tests/run.sh $(B) >/dev/null || true
	@git status --short tests/

run: deps all
	@sh tools/run-sample.sh $(B)

gpu-test: all
	@sh tests/gpu/run.sh $(B)

bench: all
	@sh tools/bench.sh $(B)

fuzz: deps
	@sh tools/fuzz.sh $(FUZZ_SECONDS)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(B)/mkc $(B)/mkrun $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/libmk.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libmk.so $(DESTDIR)$(PREFIX)/lib/libmk.so.0
	ln -sf libmk.so.0 $(DESTDIR)$(PREFIX)/lib/libmk.so
	install -m 644 runtime/mk.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' tools/mk.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/mk.pc

clean:
	rm -rf build

-include $(shell find $(B) -name '*.d' 2>/dev/null)
