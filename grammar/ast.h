/* ast.h - the syntax tree of a .mk pipeline, as written.
 *
 * The parser (parse.y) builds it and nothing else: names are not resolved,
 * expressions are not evaluated, contextual words (split, tile, nvlink,
 * node, causal, dtype names ...) are kept as identifiers with their spans so
 * that sema (compiler/sema.c) can say precisely what is wrong with them.
 * Every node carries the byte span of the text it was made from; spans of
 * children lie within their parent's.  All nodes live in the compile arena.
 *
 * Entry points:
 *   parse_source  text -> tree; syntax errors go to the diagnostics and the
 *                 parser recovers at the next statement, so one run reports
 *                 several.  Returns NULL or a partial tree when it reported
 *                 errors (callers check diag_has_errors).
 *   ast_dump      an indented, stable listing (mkc --emit=ast).
 */
#ifndef MK_AST_H
#define MK_AST_H

#include <stdint.h>

#include "../base/arena.h"
#include "diag.h"
#include "../base/strbuf.h"

/* Deepest expression tree the parser builds (1 + 2 + ... counts too);
 * deeper ones are reported, so every later recursion is bounded. */
#define AST_MAX_EXPR_DEPTH 200
/* Deepest nesting of ( and [ the lexer accepts. */
#define AST_MAX_NEST 64

typedef struct ast_ident {
	const char *name;   /* NUL-terminated, in the arena */
	span where;
} ast_ident;

typedef enum ast_exprkind {
	AST_E_INT,     /* ival; `64K` already scaled */
	AST_E_FLOAT,   /* fval */
	AST_E_NAME,    /* name: a parameter, built-in, tensor, dtype or word */
	AST_E_NEG,     /* -lhs */
	AST_E_BIN,     /* lhs op rhs, op one of + - * / % */
	AST_E_CALL,    /* call: an op's result as an argument, mul(silu(G), U) */
	AST_E_ERROR    /* stands in for an expression already reported */
} ast_exprkind;

typedef struct ast_expr {
	ast_exprkind kind;
	span where;
	int depth;     /* 1 for a leaf */
	char op;       /* AST_E_BIN */
	int64_t ival;
	double fval;
	const char *name;
	struct ast_expr *lhs, *rhs;
	struct ast_call *call;   /* AST_E_CALL */
} ast_expr;

typedef struct ast_exprs {
	ast_expr **v;
	int n, cap;
} ast_exprs;

/* `split(0, gpus)`, `partial`, `local` after a tensor type; `tile 128 x 256
 * x 64`, `chunk 64K` after a call: a word and its arguments. */
typedef struct ast_attr {
	ast_ident name;
	ast_exprs args;
	int has_parens;  /* attr written with (...) */
	span where;
} ast_attr;

typedef struct ast_attrs {
	ast_attr *v;
	int n, cap;
} ast_attrs;

/* op(args) */
typedef struct ast_call {
	ast_ident op;
	ast_exprs args;
	span where;
} ast_call;

typedef enum ast_stmtkind {
	AST_MESH,    /* mesh nodes x gpus */
	AST_PARAM,   /* param NAME = expr (one per item of a list) */
	AST_DECL,    /* in|out|temp NAME : dtype[dims] attrs */
	AST_ASSIGN,  /* [stage NAME : KIND] NAME = op(args) hints */
	AST_PUT,     /* stage NAME : KIND DST[rows of p] <- SRC@p for p in SET hints */
	AST_ROLES    /* roles NAME count, ... */
} ast_stmtkind;

typedef enum ast_declkind { AST_IN, AST_OUT, AST_TEMP } ast_declkind;

typedef struct ast_role {
	ast_ident name;
	ast_expr *count;
	span where;
} ast_role;

typedef struct ast_stmt {
	ast_stmtkind kind;
	span where;
	union {
		struct {             /* AST_MESH */
			ast_expr *nodes, *gpus;
		} mesh;
		struct {             /* AST_PARAM */
			ast_ident name;
			ast_expr *value;
		} param;
		struct {             /* AST_DECL */
			ast_declkind kind;
			ast_ident name;
			ast_ident dtype;
			ast_exprs dims;
			span dims_where;    /* [ ... ] */
			ast_attrs attrs;
		} decl;
		struct {             /* AST_ASSIGN and AST_PUT */
			int staged;         /* written as `stage NAME : KIND ...` */
			ast_ident stage;    /* staged only */
			ast_ident how;      /* staged only: compute, nvlink, rdma, local */
			ast_ident target;
			ast_call call;      /* AST_ASSIGN */
			/* AST_PUT: target[part of pvar] <- src@svar for fvar in set */
			ast_ident part;     /* rows | cols */
			ast_ident pvar, src, svar, fvar, set;
			ast_attrs hints;
		} op;
		struct {             /* AST_ROLES */
			ast_role *v;
			int n, cap;
		} roles;
	} u;
} ast_stmt;

typedef struct ast_pipeline {
	ast_ident name;
	span where;
	span open;              /* the '{' */
	ast_stmt **stmts;
	int nstmts, cap;
} ast_pipeline;

struct ast_pipeline *parse_source(srcset *src, int file, diags *d, arena *a);
void ast_dump(const struct ast_pipeline *p, const srcset *src, strbuf *out);

/* ---- for the parser (ast.c) --------------------------------------------- */
ast_expr *ast_int(arena *a, span w, int64_t v);
ast_expr *ast_float(arena *a, span w, double v);
ast_expr *ast_name(arena *a, span w, const char *name);
/* op(args) in an argument; depth 1 + its deepest argument's (bounded as
 * ast_bin's). */
ast_expr *ast_call_expr(arena *a, diags *d, span w, ast_ident op, ast_exprs args);
/* Builds -e or l op r; past AST_MAX_EXPR_DEPTH reports once (to d) and
 * returns an AST_E_ERROR node that absorbs whatever is built on top. */
ast_expr *ast_neg(arena *a, diags *d, span w, ast_expr *e);
ast_expr *ast_bin(arena *a, diags *d, span w, char op, ast_expr *l, ast_expr *r);
ast_stmt *ast_stmt_new(arena *a, ast_stmtkind k, span w);

/* Source text of a span (for messages): at most max bytes, NUL-terminated,
 * in the arena. */
const char *ast_span_text(arena *a, const srcset *src, span w, int max);

#endif
