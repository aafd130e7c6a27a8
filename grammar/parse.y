/* parse.y - the .mk grammar (reentrant bison, byte-span locations).
 *
 * The grammar of docs/language.md, rule for rule.  Actions only build the
 * tree (ast.h); meaning is sema's.  Contextual words (split, tile, chunk,
 * nvlink, node, rows, causal, dtype names ...) are plain names here, so a
 * misspelt one gets a precise message from sema ("unknown peer set 'nod'")
 * rather than a bare syntax error.
 *
 * Errors.  yyreport_syntax_error records "unexpected X; expected Y" and
 * nothing else; the diagnostics renderer prints it.  Recovery is at
 * statement level (`body: body error EOS`): the parser skips to the end of
 * the statement and goes on, so a file with several broken statements gets
 * one report for each.
 */
%define api.pure full
%define api.prefix {mk_yy}
%define api.location.type {span}
%define parse.error custom
%locations
%expect 0

%param {yyscan_t scanner}
%parse-param {struct parse_state *ps}

%code requires {
#include <setjmp.h>
#include <stdint.h>

#include "grammar/ast.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

/* Shared by the lexer and the parser of one parse_source call. */
struct parse_state {
	const srcset *src;
	int file;
	diags *d;
	arena *a;
	uint32_t off;          /* lexer: bytes consumed */
	int last;              /* lexer: last token returned */
	int nest;              /* lexer: open ( and [ */
	int virt;              /* lexer: the EOS before this '}' was sent */
	int fatal;             /* stop without further reports */
	int in_body;           /* between the pipeline's braces */
	span open;             /* the pipeline's '{' */
	ast_pipeline *result;
	jmp_buf oom;           /* flex ran out of memory */
};
}

%code provides {
int mk_yylex(MK_YYSTYPE *lval, MK_YYLTYPE *lloc, yyscan_t scanner);
}

%code {
#include <string.h>

#include "lex.h"

#define YYLLOC_DEFAULT(cur, rhs, n)                                    \
	do {                                                           \
		if (n) {                                               \
			(cur).file = YYRHSLOC(rhs, 1).file;            \
			(cur).start = YYRHSLOC(rhs, 1).start;          \
			(cur).end = YYRHSLOC(rhs, n).end;              \
		} else {                                               \
			(cur).file = YYRHSLOC(rhs, 0).file;            \
			(cur).start = (cur).end = YYRHSLOC(rhs, 0).end; \
		}                                                      \
	} while (0)

static void mk_yyerror(MK_YYLTYPE *loc, yyscan_t scanner,
		       struct parse_state *ps, const char *msg);

#define A (ps->a)

static void add_stmt(struct parse_state *ps, ast_stmt *s)
{
	if (!s || !ps->result)
		return;
	ast_pipeline *p = ps->result;
	ARENA_PUSH(A, p->stmts, p->nstmts, p->cap, s);
}

static void push_expr(arena *a, ast_exprs *v, ast_expr *e)
{
	ARENA_PUSH(a, v->v, v->n, v->cap, e);
}

static void push_attr(arena *a, ast_attrs *v, ast_attr x)
{
	ARENA_PUSH(a, v->v, v->n, v->cap, x);
}

static ast_stmt *op_stmt(struct parse_state *ps, ast_stmtkind k, span w,
			 ast_ident target)
{
	ast_stmt *s = ast_stmt_new(A, k, w);
	if (s)
		s->u.op.target = target;
	return s;
}
}

%union {
	int64_t ival;
	double fval;
	ast_ident id;
	ast_expr *expr;
	ast_exprs exprs;
	ast_attr attr;
	ast_attrs attrs;
	ast_stmt *stmt;
	ast_role role;
	ast_declkind dk;
	char dummy;
}

%token <id> IDENT "name"
%token <ival> INT "integer"
%token <fval> FLOAT "number"
%token EOS "end of line"
%token ARROW "'<-'"
%token PIPELINE "'pipeline'" MESH "'mesh'" PARAM "'param'"
%token IN "'in'" OUT "'out'" TEMP "'temp'" STAGE "'stage'" ROLES "'roles'"
%token FOR "'for'" X "'x'" OF "'of'"

%type <id> ident
%type <expr> expr
%type <exprs> exprs args hvals
%type <attr> attr hint
%type <attrs> attrs hints
%type <stmt> assign put roles
%type <role> role
%type <dk> declkind

%left '+' '-'
%left '*' '/' '%'
%precedence NEG

%%

/* file: EOS* pipeline EOS* */
file
	: eoss pipeline eoss
	;

/* eoss: EOS* */
eoss
	: %empty
	| eoss EOS
	;

/* pipeline: 'pipeline' NAME '{' body '}' */
pipeline
	: head body '}'       { ps->in_body = 0; if (ps->result) ps->result->where = span_join(ps->result->where, @3); }
	;

/* head: 'pipeline' NAME '{'   -- makes the tree, so errors keep a partial one */
head
	: PIPELINE ident '{'  {
		ps->result = arena_alloc(A, sizeof *ps->result);
		if (ps->result) {
			ps->result->name = $2;
			ps->result->where = @$;
			ps->result->open = @3;
		}
		ps->open = @3;
		ps->in_body = 1;
	}
	;

/* body: (stmt? EOS)*  -- a broken statement is skipped to its EOS */
body
	: %empty
	| body EOS
	| body stmt EOS
	| body error EOS      { yyerrok; }
	;

/* stmt: mesh | params | decl | assign | stage | roles
 * mesh:  'mesh' expr 'x' expr
 * stage: 'stage' NAME ':' KIND assign | 'stage' NAME ':' KIND put
 * roles: 'roles' role (',' role)* */
stmt
	: MESH expr X expr    {
		ast_stmt *s = ast_stmt_new(A, AST_MESH, @$);
		if (s) {
			s->u.mesh.nodes = $2;
			s->u.mesh.gpus = $4;
		}
		add_stmt(ps, s);
	}
	| PARAM params
	| decl
	| assign              { add_stmt(ps, $1); }
	| STAGE ident ':' ident assign {
		if ($5) {
			$5->where = @$;
			$5->u.op.staged = 1;
			$5->u.op.stage = $2;
			$5->u.op.how = $4;
		}
		add_stmt(ps, $5);
	}
	| STAGE ident ':' ident put {
		if ($5) {
			$5->where = @$;
			$5->u.op.staged = 1;
			$5->u.op.stage = $2;
			$5->u.op.how = $4;
		}
		add_stmt(ps, $5);
	}
	| ROLES roles         {
		if ($2)
			$2->where = @$;
		add_stmt(ps, $2);
	}
	;

/* params: param (',' param)*  -- each item becomes its own statement */
params
	: param
	| params ',' param
	;

/* param: NAME '=' expr */
param
	: ident '=' expr      {
		ast_stmt *s = ast_stmt_new(A, AST_PARAM, @$);
		if (s) {
			s->u.param.name = $1;
			s->u.param.value = $3;
		}
		add_stmt(ps, s);
	}
	;

/* decl: ('in' | 'out' | 'temp') NAME ':' DTYPE '[' exprs ']' attr* */
decl
	: declkind ident ':' ident '[' exprs ']' attrs {
		ast_stmt *s = ast_stmt_new(A, AST_DECL, @$);
		if (s) {
			s->u.decl.kind = $1;
			s->u.decl.name = $2;
			s->u.decl.dtype = $4;
			s->u.decl.dims = $6;
			s->u.decl.dims_where = span_join(@5, @7);
			s->u.decl.attrs = $8;
		}
		add_stmt(ps, s);
	}
	;

/* declkind: 'in' | 'out' | 'temp' */
declkind
	: IN                  { $$ = AST_IN; }
	| OUT                 { $$ = AST_OUT; }
	| TEMP                { $$ = AST_TEMP; }
	;

/* attrs: attr*
 * attr:  NAME | NAME '(' args ')'   -- split(0), partial, local */
attrs
	: %empty              { memset(&$$, 0, sizeof $$); }
	| attrs attr          { $$ = $1; push_attr(A, &$$, $2); }
	;

attr
	: ident               { memset(&$$, 0, sizeof $$); $$.name = $1; $$.where = @$; }
	| ident '(' args ')'  {
		memset(&$$, 0, sizeof $$);
		$$.name = $1;
		$$.args = $3;
		$$.has_parens = 1;
		$$.where = @$;
	}
	;

/* assign: NAME '=' OP '(' args ')' hint* */
assign
	: ident '=' ident '(' args ')' hints {
		$$ = op_stmt(ps, AST_ASSIGN, @$, $1);
		if ($$) {
			$$->u.op.call.op = $3;
			$$->u.op.call.args = $5;
			$$->u.op.call.where = span_join(@3, @6);
			$$->u.op.hints = $7;
		}
	}
	;

/* put: NAME '[' PART 'of' VAR ']' '<-' NAME '@' VAR 'for' VAR 'in' SET hint* */
put
	: ident '[' ident OF ident ']' ARROW ident '@' ident FOR ident IN ident hints {
		$$ = op_stmt(ps, AST_PUT, @$, $1);
		if ($$) {
			$$->u.op.part = $3;
			$$->u.op.pvar = $5;
			$$->u.op.src = $8;
			$$->u.op.svar = $10;
			$$->u.op.fvar = $12;
			$$->u.op.set = $14;
			$$->u.op.hints = $15;
		}
	}
	;

/* hints: hint*
 * hint:  NAME hvals      -- tile 128 x 256 x 64, chunk 64K
 * hvals: expr ('x' expr)* */
hints
	: %empty              { memset(&$$, 0, sizeof $$); }
	| hints hint          { $$ = $1; push_attr(A, &$$, $2); }
	;

hint
	: IDENT hvals         {
		memset(&$$, 0, sizeof $$);
		$$.name = $1;
		$$.args = $2;
		$$.where = @$;
	}
	;

hvals
	: expr                { memset(&$$, 0, sizeof $$); push_expr(A, &$$, $1); }
	| hvals X expr        { $$ = $1; push_expr(A, &$$, $3); }
	;

/* roles: role (',' role)*
 * role:  ROLE expr */
roles
	: role                {
		$$ = ast_stmt_new(A, AST_ROLES, @$);
		if ($$)
			ARENA_PUSH(A, $$->u.roles.v, $$->u.roles.n, $$->u.roles.cap, $1);
	}
	| roles ',' role      {
		$$ = $1;
		if ($$)
			ARENA_PUSH(A, $$->u.roles.v, $$->u.roles.n, $$->u.roles.cap, $3);
	}
	;

role
	: IDENT expr          { $$ = (ast_role){$1, $2, @$}; }
	;

/* args:  exprs?
 * exprs: expr (',' expr)* */
args
	: %empty              { memset(&$$, 0, sizeof $$); }
	| exprs
	;

exprs
	: expr                { memset(&$$, 0, sizeof $$); push_expr(A, &$$, $1); }
	| exprs ',' expr      { $$ = $1; push_expr(A, &$$, $3); }
	;

/* expr: expr ('+'|'-'|'*'|'/'|'%') expr | '-' expr | '(' expr ')'
 *     | INT | FLOAT | NAME | NAME '(' args ')'     (a call: an op's argument) */
expr
	: expr '+' expr       { $$ = ast_bin(A, ps->d, @$, '+', $1, $3); }
	| expr '-' expr       { $$ = ast_bin(A, ps->d, @$, '-', $1, $3); }
	| expr '*' expr       { $$ = ast_bin(A, ps->d, @$, '*', $1, $3); }
	| expr '/' expr       { $$ = ast_bin(A, ps->d, @$, '/', $1, $3); }
	| expr '%' expr       { $$ = ast_bin(A, ps->d, @$, '%', $1, $3); }
	| '-' expr %prec NEG  { $$ = ast_neg(A, ps->d, @$, $2); }
	| '(' expr ')'        { $$ = $2; }
	| INT                 { $$ = ast_int(A, @$, $1); }
	| FLOAT               { $$ = ast_float(A, @$, $1); }
	| ident               { $$ = ast_name(A, @$, $1.name); }
	| ident '(' args ')'  { $$ = ast_call_expr(A, ps->d, @$, $1, $3); }
	;

/* NAME: a name, or one of the contextual words `x` and `of` */
ident
	: IDENT
	| X                   { $$.name = "x"; $$.where = @$; }
	| OF                  { $$.name = "of"; $$.where = @$; }
	;

%%

/* What a token looks like in a message: its source text where it has one. */
static void describe(struct parse_state *ps, yysymbol_kind_t k, span w,
		     strbuf *out)
{
	const char *t = ps->src->files[ps->file].text + w.start;
	uint32_t n = w.end - w.start;
	switch (k) {
	case YYSYMBOL_YYEOF:
		sb_puts(out, "end of file");
		return;
	case YYSYMBOL_EOS:
		if (n == 1 && *t != '\n')
			sb_printf(out, "'%c'", *t);
		else
			sb_puts(out, n ? "end of line" : "end of file");
		return;
	case YYSYMBOL_IDENT:
	case YYSYMBOL_INT:
	case YYSYMBOL_FLOAT:
		sb_printf(out, "%s '%.*s%s'", yysymbol_name(k), n > 32 ? 32 : (int)n,
			  t, n > 32 ? "..." : "");
		return;
	default:
		sb_puts(out, yysymbol_name(k));
	}
}

/* An error at the end of the file is shown after the last thing in it. */
static span at_eof(struct parse_state *ps, span w)
{
	const char *t = ps->src->files[ps->file].text;
	while (w.start > 0 && (t[w.start - 1] == '\n' || t[w.start - 1] == ' ' ||
			       t[w.start - 1] == '\t' || t[w.start - 1] == '\r'))
		w.start--;
	w.end = w.start;
	return w;
}

static int is_expr_start(yysymbol_kind_t k)
{
	return k == YYSYMBOL_INT || k == YYSYMBOL_FLOAT || k == YYSYMBOL_IDENT ||
	       k == YYSYMBOL_X || k == YYSYMBOL_OF || k == YYTRANSLATE('-') ||
	       k == YYTRANSLATE('(');
}

static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner,
				 struct parse_state *ps)
{
	(void)scanner;
	if (ps->fatal)
		return 0;
	yysymbol_kind_t la = yypcontext_token(ctx);
	span w = *yypcontext_location(ctx);
	if (la == YYSYMBOL_YYEOF || w.start == w.end)
		w = at_eof(ps, w);
	if (la == YYSYMBOL_YYEOF && ps->in_body) {
		diag_error(ps->d, w, "unexpected end of file; expected '}'");
		diag_note(ps->d, ps->open, "to close '{' opened here");
		return 0;
	}
	/* What could come instead, with the many tokens that start an
	 * expression (or a name) said as one word. */
	yysymbol_kind_t exp[YYNTOKENS];
	int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
	const char *say[YYNTOKENS + 1];
	int ns = 0, expr = 0, name = 0;
	for (int i = 0; i < n; i++) {
		expr |= exp[i] == YYSYMBOL_INT;
		name |= exp[i] == YYSYMBOL_IDENT;
	}
	if (expr)
		say[ns++] = "an expression";
	else if (name)
		say[ns++] = "name";
	for (int i = 0; i < n; i++) {
		if ((expr && is_expr_start(exp[i])) ||
		    (name && (exp[i] == YYSYMBOL_IDENT || exp[i] == YYSYMBOL_X ||
			      exp[i] == YYSYMBOL_OF)))
			continue;
		say[ns++] = yysymbol_name(exp[i]);
	}
	strbuf m;
	sb_init(&m);
	sb_puts(&m, "unexpected ");
	describe(ps, la, w, &m);
	if (ns > 0 && ns <= 4) {
		sb_puts(&m, "; expected ");
		for (int i = 0; i < ns; i++) {
			if (i)
				sb_puts(&m, i == ns - 1 ? " or " : ", ");
			sb_puts(&m, say[i]);
		}
	}
	diag_error(ps->d, w, "%s", sb_str(&m));
	sb_free(&m);
	return 0;
}

static void mk_yyerror(MK_YYLTYPE *loc, yyscan_t scanner,
		       struct parse_state *ps, const char *msg)
{
	(void)scanner;
	if (ps->fatal)
		return;
	if (!strcmp(msg, "memory exhausted")) {
		diag_error(ps->d, *loc, "statement nested too deeply");
		ps->fatal = 1;
	} else {
		diag_error(ps->d, *loc, "%s", msg);
	}
}

struct ast_pipeline *parse_source(srcset *src, int file, diags *d, arena *a)
{
	if (file < 0 || file >= src->n)
		return NULL;
	if (src->files[file].len > (1u << 30)) {   /* flex lengths are ints */
		diag_error(d, (span){file, 0, 0}, "file is larger than 1 GiB");
		return NULL;
	}
	/* volatile: read after a longjmp from the lexer */
	struct parse_state *volatile ps = arena_alloc(a, sizeof *ps);
	if (!ps)
		return NULL;
	ps->src = src;
	ps->file = file;
	ps->d = d;
	ps->a = a;
	ps->open = SPAN_NONE;
	yyscan_t volatile sc = NULL;
	if (mk_yylex_init_extra(ps, (yyscan_t *)&sc) != 0) {
		a->failed = 1;
		return NULL;
	}
	if (setjmp(ps->oom)) {
		/* flex could not allocate; its buffers are lost */
		a->failed = 1;
		return NULL;
	}
	const src_file *f = &src->files[file];
	YY_BUFFER_STATE b = mk_yy_scan_bytes(f->text, (int)f->len, sc);
	int rc = mk_yyparse(sc, ps);
	mk_yy_delete_buffer(b, sc);
	mk_yylex_destroy(sc);
	if (rc != 0 && !diag_has_errors(d))
		diag_error(d, (span){file, f->len, f->len}, "cannot parse this file");
	if (ps->result && ps->result->where.end < ps->result->open.end)
		ps->result->where.end = ps->result->open.end;
	return ps->result;
}
