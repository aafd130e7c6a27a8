/* convert.c - float32 to and from the narrow element types on the host
 * (bf16, f16, e4m3), rounding to nearest even like the device's cvt.rn;
 * e4m3 saturates like cvt.rn.satfinite (its largest finite value is 448,
 * it has no infinity, and 0x7f / 0xff are its NaNs). */
#include <string.h>

#include "mk_int.h"
#include "base/parfor.h"

uint16_t mk_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(((x >> 16) & 0x8000u) | 0x7fc0u);  /* quiet NaN */
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

float mk_bf16_to_f32(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

uint16_t mk_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
	if (e == 0xff)
		return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
	int ne = (int)e - 127 + 15;
	if (ne >= 0x1f)
		return (uint16_t)(sign | 0x7c00u);
	if (ne <= 0) {
		if (ne < -10)
			return (uint16_t)sign;
		m |= 0x800000u;
		int shift = 14 - ne;
		uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = sign | ((uint32_t)ne << 10) | (m >> 13), rem = m & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;
	return (uint16_t)h;
}

float mk_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
	if (e == 0x1f) {
		x = sign | 0x7f800000u | (m << 13);
	} else if (e == 0) {
		if (!m) {
			x = sign;
		} else {
			int k = -1;
			do {
				k++;
				m <<= 1;
			} while (!(m & 0x400u));
			x = sign | ((uint32_t)(127 - 15 - k) << 23) | ((m & 0x3ffu) << 13);
		}
	} else {
		x = sign | ((e + 127 - 15) << 23) | (m << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

uint8_t mk_f32_to_e4m3(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	const uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint8_t)(sign | 0x7fu);           /* NaN */
	float a = f < 0 ? -f : f;
	if (a >= 464.0f)  /* 448 and the half-way point to 512: saturate (inf too) */
		return (uint8_t)(sign | 0x7eu);
	/* the value in units of the smallest subnormal, 2^-9, rounded to
	 * nearest even at the precision of its binade (3 bits after the
	 * leading one; subnormals below 2^-6 have a fixed step of 2^-9) */
	uint32_t e = (x >> 23) & 0xffu, m = (x & 0x7fffffu) | 0x800000u;
	int ue = (int)e - 127;                         /* a = m * 2^(ue - 23) */
	if (e == 0 || ue < -10)
		return sign;                               /* below half of 2^-9 */
	int step = ue < -6 ? -9 : ue - 3;               /* the binade's spacing */
	int shift = step - (ue - 23);                   /* bits of m below it */
	uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
	if (rem > mid || (rem == mid && (q & 1)))
		q++;
	/* q * 2^step: encode (a carry into the next binade lands right) */
	if (step == -9)  /* below 2^-5 the code is q itself (a carry goes on up) */
		return (uint8_t)(sign | q);
	int be = ue + 7;                               /* biased exponent */
	if (q >= 16) {                                 /* 1.111 rounded up */
		q >>= 1;
		be++;
	}
	return (uint8_t)(sign | (uint32_t)be << 3 | (q & 7u));
}

float mk_e4m3_to_f32(uint8_t h)
{
	const uint32_t e = (h >> 3) & 15u, m = h & 7u;
	float a;
	if ((h & 0x7fu) == 0x7fu)
		a = __builtin_nanf("");
	else if (e == 0)
		a = (float)m * 0x1p-9f;
	else
		a = (float)(8u + m) * __builtin_ldexpf(1.0f, (int)e - 10);
	return h & 0x80u ? -a : a;
}

typedef struct {
	ir_dtype t;
	const void *src;
	void *dst;
} conv_job;

static void from_f32_range(void *arg, size_t lo, size_t hi)
{
	const conv_job *j = arg;
	const float *src = j->src;
	switch (j->t) {
	case DT_BF16:
		for (size_t i = lo; i < hi; i++)
			((uint16_t *)j->dst)[i] = mk_f32_to_bf16(src[i]);
		break;
	case DT_F16:
		for (size_t i = lo; i < hi; i++)
			((uint16_t *)j->dst)[i] = mk_f32_to_f16(src[i]);
		break;
	case DT_I32:
		for (size_t i = lo; i < hi; i++)
			((int32_t *)j->dst)[i] = (int32_t)(src[i] < 0 ? src[i] - 0.5f : src[i] + 0.5f);
		break;
	case DT_E4M3:
		for (size_t i = lo; i < hi; i++)
			((uint8_t *)j->dst)[i] = mk_f32_to_e4m3(src[i]);
		break;
	default:
		memcpy((float *)j->dst + lo, src + lo, (hi - lo) * sizeof(float));
		break;
	}
}

static void to_f32_range(void *arg, size_t lo, size_t hi)
{
	const conv_job *j = arg;
	float *dst = j->dst;
	switch (j->t) {
	case DT_BF16:
		for (size_t i = lo; i < hi; i++)
			dst[i] = mk_bf16_to_f32(((const uint16_t *)j->src)[i]);
		break;
	case DT_F16:
		for (size_t i = lo; i < hi; i++)
			dst[i] = mk_f16_to_f32(((const uint16_t *)j->src)[i]);
		break;
	case DT_I32:
		for (size_t i = lo; i < hi; i++)
			dst[i] = (float)((const int32_t *)j->src)[i];
		break;
	case DT_E4M3:
		for (size_t i = lo; i < hi; i++)
			dst[i] = mk_e4m3_to_f32(((const uint8_t *)j->src)[i]);
		break;
	default:
		memcpy(dst + lo, (const float *)j->src + lo, (hi - lo) * sizeof(float));
		break;
	}
}

/* A tensor of millions of values is converted on every core (parfor.h). */
enum { CONV_GRAIN = 1 << 22 };

void mk_convert_from_f32(ir_dtype t, const float *src, void *dst, size_t n)
{
	conv_job j = {t, src, dst};
	parfor(n, CONV_GRAIN, from_f32_range, &j);
}

void mk_convert_to_f32(ir_dtype t, const void *src, float *dst, size_t n)
{
	conv_job j = {t, src, dst};
	parfor(n, CONV_GRAIN, to_f32_range, &j);
}
