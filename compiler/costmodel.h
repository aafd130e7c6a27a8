/* costmodel.h - device and link constants, and what a task costs.
 *
 * One table (ir_device) of constants with H200 defaults, each documented in
 * docs/costmodel.md with where it comes from; a file of `key = value` lines
 * overrides any of them (mkc --device=FILE).
 */
#ifndef MK_COSTMODEL_H
#define MK_COSTMODEL_H

#include <stddef.h>

#include "ir.h"

#define COSTMODEL_KEYS(X)                                              \
	X(sms, INT)                                                    \
	X(max_threads_per_sm, INT)                                     \
	X(smem_per_sm, INT)                                            \
	X(regs_per_sm, INT)                                            \
	X(bf16_tflops, DBL)                                            \
	X(f32_tflops, DBL)                                             \
	X(mem_gbps, DBL)                                               \
	X(nvlink_gbps, DBL)                                            \
	X(nic_gbps, DBL)                                               \
	X(nvlink_lat_us, DBL)                                          \
	X(nic_lat_us, DBL)                                             \
	X(flag_lat_us, DBL)                                            \
	X(launch_us, DBL)                                              \
	X(run_us, DBL)                                                 \
	X(task_us, DBL)                                                \
	X(fill_us, DBL)                                                \
	X(copy_cta_gbps, DBL)                                          \
	X(stream_cta_gbps, DBL)                                        \
	X(mma_eff, DBL)                                                \
	X(attn_eff, DBL)                                               \
	X(attn_k64_eff, DBL)                                           \
	X(attn_d64_eff, DBL)                                           \
	X(attn_mma_eff, DBL)

ir_device costmodel_h200(void);
/* Reads `key = value` lines (# comments) over *d; -1 with why[] (FILE:LINE:
 * what) on error, *d unchanged. */
int costmodel_load(const char *path, ir_device *d, char *why, size_t n);

/* The device files of tools/devices/, embedded at build time (tools/embed
 * --devices): name "h100.txt", text as in the file. */
typedef struct cm_file {
	const char *name;
	const char *text;
} cm_file;
extern const cm_file cm_devices[];
extern const int cm_ndevices;
/* The embedded file whose `card = NAME` line names part of `card` (the
 * driver's device name, "NVIDIA H100 80GB HBM3"), its keys applied over
 * *d: its name, or NULL (*d unchanged; why[] "" when no file names the
 * card, else what is wrong with an embedded file). */
const char *costmodel_card(const char *card, ir_device *d, char *why, size_t n);

/* Per-task costs in microseconds on one CTA (one SM). */
double cost_stream_us(const ir_device *d, double bytes);
/* A tile's epilogue storing `bytes` from registers (no fixed part: the
 * tile's fill_us has it). */
double cost_store_us(const ir_device *d, double bytes);
/* A compute tile: the longer of its arithmetic and its share of device
 * memory, streamed by one of `ctas` CTAs of a rank (the rank's share of
 * the bandwidth split among them, at most what one CTA's ring streams),
 * plus fill_us (the ring's fill and drain, the epilogue, the flags). */
double cost_tile_us(const ir_device *d, double flops, double hbm, int ctas, int ranks_per_gpu);
/* What such a tile still needs once its A is there when it streamed the
 * share `early` of its bytes before (a tile that waits per operand loads
 * B's first stages first): the longer of its arithmetic and the rest of
 * its stream, plus fill_us. */
double cost_tile_rest_us(const ir_device *d, double flops, double hbm, int ctas, int ranks_per_gpu,
			 double early);
/* An attention tile: as a matmul tile, its arithmetic (flops counting
 * only the keys its rows see) at the rate of its tile, eff
 * (cost_attn_eff). */
double cost_attn_us(const ir_device *d, double flops, double eff, double hbm, int ctas,
		    int ranks_per_gpu);
/* The rate of op's attention tile as planned: attn_eff, attn_k64_eff (D =
 * 128 at 64 keys a stage), attn_d64_eff or attn_mma_eff (causal or not
 * alike: the measured rates per flop of the keys the rows see differ by
 * less than the runs). */
double cost_attn_eff(const ir_device *d, const ir_prog *p, const ir_op *op);
/* The most CTAs that copying over a link of link_gbps keeps busy: more
 * cannot move more than it carries (the copy roles' bound, and a
 * dispatch's beside a pool). */
int cost_copy_ctas(const ir_device *d, double link_gbps);
/* A copy by one CTA of a role of `ctas` CTAs sharing a link of link_gbps. */
double cost_copy_us(const ir_device *d, double bytes, ir_transport tr,
		    int ctas, int ranks_per_gpu);

#endif
