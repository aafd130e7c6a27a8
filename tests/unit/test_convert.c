/* test_convert.c - the host's element conversions (runtime/convert.c)
 * against the CPU reference's rounding (cpuref_round), which the GPU's
 * cvt.rn matches: every e4m3 code round-trips, and float32 values of every
 * binade (edges, ties, subnormals, overflow, NaN, infinities, and a sweep of
 * random bit patterns) convert to the value cpuref_round gives, for bf16,
 * f16 and e4m3.  (e4m3 inputs once reached the GPU as zeros: the host's
 * conversion was a memset.)  Exit 0 = pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compiler/cpuref.h"
#include "runtime/mk_int.h"

static int fails;

static void expect(int ok, const char *what, float x, float got, float want)
{
	if (ok)
		return;
	if (fails++ < 20)
		fprintf(stderr, "FAIL %s: %a -> %a, want %a\n", what, (double)x, (double)got,
			(double)want);
}

static float through(ir_dtype t, float x)
{
	unsigned char buf[4];
	float y;
	mk_convert_from_f32(t, &x, buf, 1);
	mk_convert_to_f32(t, buf, &y, 1);
	return y;
}

static void one(float x)
{
	static const ir_dtype ts[] = {DT_BF16, DT_F16, DT_E4M3};
	static const char *names[] = {"bf16", "f16", "e4m3"};
	for (int i = 0; i < 3; i++) {
		float got = through(ts[i], x), want = cpuref_round(ts[i], x);
		int ok = isnan(want) ? isnan(got)
			 : got == want && signbit(got) == signbit(want);
		expect(ok, names[i], x, got, want);
	}
}

int main(void)
{
	/* every e4m3 code: decode, encode, the same code (NaN stays NaN) */
	for (int h = 0; h < 256; h++) {
		uint8_t c = (uint8_t)h;
		float f = mk_e4m3_to_f32(c);
		if ((h & 0x7f) == 0x7f) {
			expect(isnan(f) && isnan(mk_e4m3_to_f32(mk_f32_to_e4m3(f))), "e4m3 NaN", (float)h,
			       f, NAN);
			continue;
		}
		uint8_t back = mk_f32_to_e4m3(f);
		expect(back == c, "e4m3 code round trip", (float)h, (float)back, (float)h);
	}
	/* the known values */
	expect(mk_e4m3_to_f32(0x7e) == 448.0f, "e4m3 max", 0, mk_e4m3_to_f32(0x7e), 448);
	expect(mk_e4m3_to_f32(0x01) == 0x1p-9f, "e4m3 min subnormal", 0, mk_e4m3_to_f32(0x01), 0x1p-9f);
	expect(mk_e4m3_to_f32(0x38) == 1.0f, "e4m3 one", 0, mk_e4m3_to_f32(0x38), 1);
	expect(mk_f32_to_e4m3(1e9f) == 0x7e && mk_f32_to_e4m3(-INFINITY) == 0xfe, "e4m3 saturates",
	       1e9f, mk_e4m3_to_f32(mk_f32_to_e4m3(1e9f)), 448);
	/* edges of every binade and the points half-way between neighbours */
	static const float edges[] = {0.0f, -0.0f, 1.0f, 0.5f, 0.0625f, 0.015625f, 0x1p-9f, 0x1p-10f,
				      0x1.8p-10f, 0x1p-11f, 0x1.2p-7f, 0x1.1p0f, 0x1.3p0f, 0x1.08p0f,
				      0x1.18p0f, 240.0f, 248.0f, 256.0f, 440.0f, 448.0f, 456.0f,
				      464.0f, 465.0f, 480.0f, 512.0f, 65504.0f, 65520.0f, 1e30f,
				      INFINITY, -INFINITY, NAN, 0x1p-14f, 0x1p-24f, 0x1p-25f,
				      0x1.8p-24f, 0x1p-126f, 0x1p-149f, 3.4e38f};
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
		one(edges[i]);
		one(-edges[i]);
	}
	for (int e = -12; e <= 9; e++)
		for (int k = 0; k <= 32; k++) {
			float x = ldexpf(1.0f + (float)k / 32.0f, e);
			one(x);
			one(-x);
		}
	/* random bit patterns, of magnitudes in the e4m3 range and beyond */
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 200000; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t bits = (uint32_t)(s >> 32);
		if (i & 1)  /* exponents 2^-12 .. 2^11 */
			bits = (bits & 0x807fffffu) | (uint32_t)(115 + (bits >> 23) % 24) << 23;
		float x;
		memcpy(&x, &bits, 4);
		one(x);
	}
	printf("%s\n", fails ? "FAIL" : "ok");
	return fails != 0;
}
