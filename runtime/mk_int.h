/* mk_int.h - what mkrun and the tests may see of libmk beyond mk.h: the
 * compiled program and schedule behind a pipeline, and host conversions. */
#ifndef MK_INT_H
#define MK_INT_H

#include <stdint.h>

#include "../compiler/compile.h"
#include "../compiler/ir.h"
#include "mk.h"

const ir_prog *mk_pipeline_prog(const mk_pipeline *p);
const ir_sched *mk_pipeline_sched(const mk_pipeline *p);

/* Compile only (no GPU): the same front half mk_pipeline_load runs.  The
 * caller owns the arena and srcset; returns an MK status and renders
 * diagnostics into log. */
mk_status mk_compile_only(srcset *src, int file, const mk_param *params, int nparams,
			  int ranks, arena *a, compile_out *out, strbuf *log);

/* Tests only: called on every schedule after it is verified and before CUDA
 * is generated (e.g. to plant a missing signal).  NULL in real use. */
extern void (*mk_test_sched_hook)(ir_sched *s);

/* Benchmarks only: when set before loading, the pipeline is also built as
 * one kernel per stage, and mk_run_stages runs it that way: as separate
 * launches (graph 0) or as one CUDA graph of them (graph 1, captured on the
 * first call).  Same tasks, same device code; ordered by kernel boundaries
 * instead of flags.  ms: GPU time of the run (events). */
extern int mk_bench_per_stage;
mk_status mk_run_stages(mk_pipeline *p, int graph, float *ms);

/* float32 <-> element types, round to nearest even */
uint16_t mk_f32_to_bf16(float f);
float mk_bf16_to_f32(uint16_t h);
uint16_t mk_f32_to_f16(float f);
float mk_f16_to_f32(uint16_t h);
uint8_t mk_f32_to_e4m3(float f);   /* saturating: +-448 at most */
float mk_e4m3_to_f32(uint8_t h);
/* n floats -> n elements of dtype (and back) */
void mk_convert_from_f32(ir_dtype t, const float *src, void *dst, size_t n);
void mk_convert_to_f32(ir_dtype t, const void *src, float *dst, size_t n);

#endif
