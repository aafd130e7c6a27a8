/* build.c - cg_build: emit, then NVRTC through the cache (build.h). */
#include "build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_arch(int major, int minor, char *buf, size_t n)
{
	snprintf(buf, n, "sm_%d%d%s", major, minor, major == 9 ? "a" : "");
}

cg_status cg_build(const ir_sched *s, cg_stage upto, const cg_build_opts *o,
		   cg_build_out *out)
{
	static const cg_build_opts dflt = {.emit = {.sys_scope = -1}};
	memset(out, 0, sizeof *out);
	if (!o)
		o = &dflt;
	if (o->arch)
		snprintf(out->arch, sizeof out->arch, "%s", o->arch);
	else
		cg_arch(9, 0, out->arch, sizeof out->arch);

	strbuf cu;
	sb_init(&cu);
	if (cg_emit_cuda(s, &o->emit, &cu, out->err, sizeof out->err) != 0) {
		sb_free(&cu);
		return CG_EEMIT;
	}
	if (cu.oom) {
		sb_free(&cu);
		return CG_ENOMEM;
	}
	out->cuda = sb_take(&cu);
	if (upto == CG_TO_CUDA)
		return CG_OK;

	cg_compile_opts co = {.arch = out->arch, .use_cache = o->use_cache,
			      .cache_dir = o->cache_dir};
	char name[160];
	snprintf(name, sizeof name, "%s.cu", s->prog->name);
	return cg_compile(out->cuda, name, &co, upto == CG_TO_PTX ? CG_PTX : CG_CUBIN, &out->bin);
}

void cg_build_free(cg_build_out *out)
{
	if (!out)
		return;
	free(out->cuda);
	out->cuda = NULL;
	cg_binary_free(&out->bin);
}
