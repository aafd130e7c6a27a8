/* sema_int.h - what the pieces of the check pass share; not for use
 * outside compiler/sema*.c.
 *
 * One `sema` holds the state of one sema_check: the mesh, the symbol table,
 * and a record per parameter, tensor and op (its ir_ value plus what the
 * checks learn on the way).  The functions below are those one piece calls
 * in another, grouped by the file that defines them; the rest are static.
 */
#ifndef MK_SEMA_INT_H
#define MK_SEMA_INT_H

#include <stdint.h>

#include "../grammar/ast.h"
#include "pass.h"

enum { SYM_BUILTIN = 1, SYM_PARAM, SYM_TENSOR };
enum { B_NODES, B_GPUS, B_WORLD };

typedef struct sym {
	const char *name;
	int kind;
	int index;
} sym;

typedef struct pinfo {
	ir_param p;
	int done;            /* evaluated: later parameters may use it */
} pinfo;

typedef struct tinfo {
	ir_tensor t;
	const ast_stmt *decl;    /* NULL for a temp made by assignment */
	span decl_place;         /* the placement attribute, if written */
	int known;               /* dtype, shape, placement set */
	int bad;
	int nassign, nput;       /* writers by kind */
	int first_writer;        /* source index of the first writing op */
	int nreads;              /* ops reading it */
	int *readers;            /* ops reading it (each once) */
	int nrd, rdcap;
	int *writers;            /* ops writing it */
	int nwr, wrcap;
} tinfo;

typedef struct opinfo {
	const ast_stmt *s;
	ir_op op;
	int bad;
	int tin[IR_MAXIN];       /* distinct tensor inputs (for the order) */
	int ntin;
	int indeg;
	int emitted;
	int cyc;                 /* reported as part of a cycle */
	int order;               /* index in ir_prog.ops */
	int nested;              /* a call in an argument (sema_nest.c) */
} opinfo;

typedef struct sema {
	const compile_opts *o;
	diags *d;
	arena *a;
	const srcset *src;
	int nodes, gpus, world;
	sym *tab;
	int tabcap, tabn;
	pinfo *p;
	int np, pcap;
	tinfo *t;
	int nt, tcap;
	opinfo *op;
	int nop, opcap;
	int *order;              /* ops in execution order */
	int norder;
	const ast_stmt *mesh, *roles;
	ir_role_hint *rh;
	int nrh, rhcap;
	int errors0;             /* errors before this pass */
	int *cyc_pos, *cyc_path; /* report_cycle's walk */
	long guess_budget;       /* names "did you mean" may still compare */
	sym *stages;             /* stage names */
	int stcap, stn;
} sema;

/* A "did you mean" candidate (name NULL: none). */
typedef struct guess {
	const char *name;
	span where;
	int dist;
} guess;

enum { WANT_INT = 1, WANT_TENSOR = 2 };


/* sema_names.c */
sym *sema_tab_find(sym *tab, int cap, const char *name);
void sema_tab_add(arena *a, sym **tab, int *cap, int *n, sym y);
sym *sema_lookup(sema *s, const char *name);
void sema_insert(sema *s, const char *name, int kind, int index);
const char *sema_hint_text(sema *s, const guess *g);
void sema_hint_note(sema *s, const guess *g);
guess sema_guess_name(sema *s, const char *want, int what);
guess sema_guess_word(const char *want, const char *const *words, int n);
int sema_reserved(sema *s, ast_ident id);
span sema_def_span(sema *s, const sym *y);
void sema_redefined(sema *s, ast_ident id, const sym *y);
int sema_word_index(const char *w, const char *const *words, int n);

/* sema_eval.c */
int64_t sema_group_size(const sema *s, ir_group g);
const char *sema_pname(sema *s, ir_place pl);
ir_place sema_mkplace(ir_placekind k, int dim, ir_group g);
const char *sema_shape_str(sema *s, int nd, const int64_t *sh);
const char *sema_type_str(sema *s, const ir_tensor *t);
const char *sema_text(sema *s, span w);
const char *sema_valued(sema *s, const ast_expr *e, int64_t v);
int sema_eval_int(sema *s, const ast_expr *e, int64_t *out);
int sema_eval_real(sema *s, const ast_expr *e, double *out);
int sema_eval_dim(sema *s, const ast_expr *e, int nd, const char *what, int *out);
int sema_eval_group(sema *s, const ast_expr *e, ir_group *g);

/* sema_nest.c: the op table as written, nested calls lifted into temps */
void sema_add_op(sema *s, const ast_stmt *st, int nested);
const ast_stmt *sema_lift_calls(sema *s, const ast_stmt *st);

/* sema_decl.c */
int sema_too_big(sema *s, const ir_tensor *t, span w);
void sema_set_local(sema *s, ir_tensor *t);
void sema_check_decl(sema *s, tinfo *ti);
void sema_bad_op(opinfo *oi, sema *s);
span sema_arg_span(const opinfo *oi, int i);

/* What an op's check makes of its result (sema_ops.c, sema_layout.c). */
typedef struct sema_result {
	ir_dtype dtype;
	int ndim;
	int64_t shape[IR_MAXDIM];
	ir_place place;
} sema_result;

/* The layout ops (heads, merge_heads, slice, concat, transpose, reshape):
 * 0, or -1 when reported (sema_layout.c). */
int sema_check_layout(sema *s, opinfo *oi, sema_result *r);
char sema_arg_kind(const char *name, int i);
void sema_resolve_ops(sema *s);

/* sema_order.c */
void sema_order_ops(sema *s);

/* sema_ops.c */
void sema_check_op(sema *s, opinfo *oi);

/* sema_hints.c */
void sema_check_hints(sema *s, opinfo *oi);
void sema_check_roles(sema *s);

#endif
