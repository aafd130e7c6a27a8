/* convert.c - float32 to and from the 16-bit element types on the host,
 * rounding to nearest even like the device's cvt.rn. */
#include <string.h>

#include "mk_int.h"

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

void mk_convert_from_f32(ir_dtype t, const float *src, void *dst, size_t n)
{
	switch (t) {
	case DT_BF16:
		for (size_t i = 0; i < n; i++)
			((uint16_t *)dst)[i] = mk_f32_to_bf16(src[i]);
		break;
	case DT_F16:
		for (size_t i = 0; i < n; i++)
			((uint16_t *)dst)[i] = mk_f32_to_f16(src[i]);
		break;
	case DT_I32:
		for (size_t i = 0; i < n; i++)
			((int32_t *)dst)[i] = (int32_t)(src[i] < 0 ? src[i] - 0.5f : src[i] + 0.5f);
		break;
	case DT_E4M3:
		memset(dst, 0, n);  /* e4m3 tensors are not produced on the host yet */
		break;
	default:
		memcpy(dst, src, n * sizeof(float));
		break;
	}
}

void mk_convert_to_f32(ir_dtype t, const void *src, float *dst, size_t n)
{
	switch (t) {
	case DT_BF16:
		for (size_t i = 0; i < n; i++)
			dst[i] = mk_bf16_to_f32(((const uint16_t *)src)[i]);
		break;
	case DT_F16:
		for (size_t i = 0; i < n; i++)
			dst[i] = mk_f16_to_f32(((const uint16_t *)src)[i]);
		break;
	case DT_I32:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)((const int32_t *)src)[i];
		break;
	case DT_E4M3:
		for (size_t i = 0; i < n; i++)
			dst[i] = 0;
		break;
	default:
		memcpy(dst, src, n * sizeof(float));
		break;
	}
}
