//! The AVX2 and AVX-VNNI kernels, chosen at run time where the CPU has them.

use std::arch::x86_64::*;

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16(p: &[u8]) -> f32 {
    let bits = u16::from_le_bytes([p[0], p[1]]);
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 0x55));
    _mm_cvtss_f32(s)
}

/// 0xFF in byte `j` where bit `j` of `bits` is set.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bytes_from_bits(bits: u32) -> __m256i {
    let v = _mm256_set1_epi32(bits as i32);
    let spread = _mm256_shuffle_epi8(
        v,
        _mm256_setr_epi64x(0, 0x0101_0101_0101_0101, 0x0202_0202_0202_0202, 0x0303_0303_0303_0303),
    );
    let mask = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask)
}

/// The 32 values of Q5_0 block `blk` as unsigned bytes 0..31 ([`super::q5_0_values`]);
/// `low` is 0x0F and `sixteen` 16 in every byte (kept in registers by the callers' loops).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q5_0_unsigned(blk: &[u8], low: __m256i, sixteen: __m256i) -> __m256i {
    let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
    let qs = _mm_loadu_si128(blk.as_ptr().add(6) as *const __m128i);
    let nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), low);
    _mm256_or_si256(nib, _mm256_and_si256(bytes_from_bits(qh), sixteen))
}

/// How far ahead of the block being read the weights are fetched (bytes).
const PREFETCH: usize = 1024;

/// `acc` plus, in each 32-bit lane, the sum of its 4 byte products `u · s` (`u` unsigned, `s`
/// signed): two multiply-adds on AVX2 (exact: no pair of products here leaves 16 bits).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dp_avx2(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
    _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
}

/// [`dp_avx2`] in one AVX-VNNI instruction; the same integers.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
unsafe fn dp_vnni(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
    _mm256_dpbusd_avx_epi32(acc, u, s)
}

/// The integer-product kernels, once per instruction set: `$dp` sums byte products, and
/// `$vnni` says whether Q6_K's products are formed on its unsigned stored values (one
/// instruction with VNNI) or on signed ones (fewer instructions without).
macro_rules! int_kernels {
    ($module:ident, $features:literal, $dp:path, $vnni:literal) => {
        pub mod $module {
            use super::super::{Format, Quantized, TILE};
            use super::{PREFETCH, f16, hsum, q5_0_unsigned};
            use std::arch::x86_64::*;

            /// Dot products of one stored weight row with activation rows `first..first + t`
            /// (`t <= TILE`).
            #[target_feature(enable = $features)]
            pub unsafe fn dot_tile(
                format: Format,
                w: &[u8],
                q: &Quantized,
                first: usize,
                t: usize,
                out: &mut [f32; TILE],
            ) {
                match t {
                    1 => tile::<1>(format, w, q, first, out),
                    2 => tile::<2>(format, w, q, first, out),
                    3 => tile::<3>(format, w, q, first, out),
                    4 => tile::<4>(format, w, q, first, out),
                    _ => unreachable!("tile of {t} rows"),
                }
            }

            /// [`dot_tile`] for a tile of `T` rows: the loops over the tile unroll, so its
            /// accumulators stay in registers.
            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn tile<const T: usize>(
                format: Format,
                w: &[u8],
                q: &Quantized,
                first: usize,
                out: &mut [f32; TILE],
            ) {
                let mut acc = [_mm256_setzero_ps(); T];
                let per_row = q.cols / 32;
                let low = _mm256_set1_epi8(0x0F);
                let base: [usize; T] = std::array::from_fn(|i| (first + i) * per_row);
                let xs: [*const i8; T] = std::array::from_fn(|i| q.qs.as_ptr().add(base[i] * 32));
                let ds: [*const f32; T] = std::array::from_fn(|i| q.d.as_ptr().add(base[i]));
                // Per 32 values of tile row `i`: the offset of its 4-value sums (see `Quantized`).
                let offsets: [*const __m256i; T] =
                    std::array::from_fn(|i| q.offset.as_ptr().add(base[i] * 8) as *const __m256i);
                let offset = |i: usize, b: usize| _mm256_loadu_si256(offsets[i].add(b));
                // Block `b` of tile row `i`: its values and its scale.
                let xv = |i: usize, b: usize| _mm256_loadu_si256(xs[i].add(b * 32) as *const __m256i);
                let dx = |i: usize, b: usize| *ds[i].add(b);
                match format {
                    Format::Q5_0 | Format::Q8_0 => {
                        // The tile's scales, side by side per block; `d · dx` of each row as
                        // one multiplication would give it.
                        let tile_d = q.tile_d.as_ptr().add(first / TILE * per_row * TILE);
                        let scales = |b: usize, d: f32| {
                            let mut dd = [0f32; TILE];
                            _mm_storeu_ps(
                                dd.as_mut_ptr(),
                                _mm_mul_ps(_mm_set1_ps(d), _mm_loadu_ps(tile_d.add(b * TILE))),
                            );
                            dd
                        };
                        // Each lane of an integer sum covers 4 values: those sums are exact,
                        // whichever way they are formed.
                        if format == Format::Q5_0 {
                            let sixteen = _mm256_set1_epi8(16);
                            for (b, blk) in w.chunks_exact(22).enumerate() {
                                _mm_prefetch::<_MM_HINT_T0>(blk.as_ptr().add(PREFETCH) as *const i8);
                                let dd = scales(b, f16(blk));
                                // Q5_0's stored `q` (0..31), unsigned; `Σ (q - 16) x = Σ q x - 16 Σ x`.
                                let wu = q5_0_unsigned(blk, low, sixteen);
                                for i in 0..T {
                                    let s = _mm256_cvtepi32_ps($dp(offset(i, b), wu, xv(i, b)));
                                    acc[i] = _mm256_fmadd_ps(s, _mm256_set1_ps(dd[i]), acc[i]);
                                }
                            }
                        } else {
                            for (b, blk) in w.chunks_exact(34).enumerate() {
                                _mm_prefetch::<_MM_HINT_T0>(blk.as_ptr().add(PREFETCH) as *const i8);
                                let dd = scales(b, f16(blk));
                                let wv = _mm256_loadu_si256(blk.as_ptr().add(2) as *const __m256i);
                                let aw = _mm256_sign_epi8(wv, wv);
                                for i in 0..T {
                                    let p = $dp(_mm256_setzero_si256(), aw, _mm256_sign_epi8(xv(i, b), wv));
                                    acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dd[i]), acc[i]);
                                }
                            }
                        }
                    }
                    Format::Q4K => {
                        for (s, sb) in w.chunks_exact(144).enumerate() {
                            let (d, dmin) = (f16(sb), f16(&sb[2..]));
                            let scales = &sb[4..16];
                            let (mut sc, mut mins) = ([0i16; 8], [0i32; 8]);
                            for j in 0..8 {
                                let (a, m) = super::super::scale_min_k4(j, scales);
                                sc[j] = a as i16;
                                mins[j] = m as i32;
                            }
                            // The super-block's integer sum: Σ_j scale_j · (q_j · x_j), one conversion.
                            let mut isum = [_mm256_setzero_si256(); T];
                            for pair in 0..4 {
                                let qv = _mm256_loadu_si256(sb.as_ptr().add(16 + 32 * pair) as *const __m256i);
                                let lo = _mm256_and_si256(qv, low);
                                let hi = _mm256_and_si256(_mm256_srli_epi16(qv, 4), low);
                                let (s0, s1) = (_mm256_set1_epi16(sc[2 * pair]), _mm256_set1_epi16(sc[2 * pair + 1]));
                                let blk = s * 8 + 2 * pair;
                                for i in 0..T {
                                    let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xv(i, blk)), s0);
                                    let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xv(i, blk + 1)), s1);
                                    isum[i] = _mm256_add_epi32(isum[i], _mm256_add_epi32(p0, p1));
                                }
                            }
                            for i in 0..T {
                                // Per 256 values the activations have one scale (`dx`), repeated per block.
                                let dxi = dx(i, s * 8);
                                let sums = &q.sums[base[i] + s * 8..base[i] + s * 8 + 8];
                                let m: i32 = (0..8).map(|j| mins[j] * sums[j]).sum();
                                acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_set1_ps(d * dxi), acc[i]);
                                acc[i] = _mm256_sub_ps(
                                    acc[i],
                                    _mm256_setr_ps(dmin * dxi * m as f32, 0., 0., 0., 0., 0., 0., 0.),
                                );
                            }
                        }
                    }
                    Format::Q6K => {
                        let three = _mm256_set1_epi8(3);
                        let thirty_two = _mm256_set1_epi8(32);
                        for (s, sb) in w.chunks_exact(210).enumerate() {
                            let d = f16(&sb[208..]);
                            let mut isum = [_mm256_setzero_si256(); T];
                            for n in 0..2 {
                                let qh = _mm256_loadu_si256(sb.as_ptr().add(128 + 32 * n) as *const __m256i);
                                for k in 0..4 {
                                    let ql =
                                        _mm256_loadu_si256(sb.as_ptr().add(64 * n + 32 * (k & 1)) as *const __m256i);
                                    let lo4 = if k < 2 { ql } else { _mm256_srli_epi16(ql, 4) };
                                    let hi2 = match k {
                                        0 => qh,
                                        1 => _mm256_srli_epi16(qh, 2),
                                        2 => _mm256_srli_epi16(qh, 4),
                                        _ => _mm256_srli_epi16(qh, 6),
                                    };
                                    // The stored values, 0..63 (the weight is the value − 32).
                                    let qu = _mm256_or_si256(
                                        _mm256_and_si256(lo4, low),
                                        _mm256_slli_epi16(_mm256_and_si256(hi2, three), 4),
                                    );
                                    let sc = &sb[192 + 8 * n + 2 * k..];
                                    let blk = s * 8 + 4 * n + k;
                                    if $vnni {
                                        // 4-value sums of (q − 32)·x (their offset is −32 Σ x), within 16
                                        // bits: the multiply-add by the scale (upper halves × 0) is exact.
                                        let scale32 = _mm256_set_m128i(
                                            _mm_set1_epi32(i32::from(sc[1] as i8 as i16 as u16)),
                                            _mm_set1_epi32(i32::from(sc[0] as i8 as i16 as u16)),
                                        );
                                        for i in 0..T {
                                            let p = $dp(offset(i, blk), qu, xv(i, blk));
                                            isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(p, scale32));
                                        }
                                    } else {
                                        let qv = _mm256_sub_epi8(qu, thirty_two);
                                        let aw = _mm256_sign_epi8(qv, qv);
                                        let scale16 = _mm256_set_m128i(
                                            _mm_set1_epi16(sc[1] as i8 as i16),
                                            _mm_set1_epi16(sc[0] as i8 as i16),
                                        );
                                        for i in 0..T {
                                            let p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv(i, blk), qv));
                                            isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(p, scale16));
                                        }
                                    }
                                }
                            }
                            for i in 0..T {
                                let scale = _mm256_set1_ps(d * dx(i, s * 8));
                                acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), scale, acc[i]);
                            }
                        }
                    }
                    Format::F32 => unreachable!(),
                }
                for i in 0..T {
                    out[i] = hsum(acc[i]);
                }
            }

            /// [`dot_tile`] of a wide Q5_0 row ([`super::super::WIDE`] bytes per block).
            #[target_feature(enable = $features)]
            pub unsafe fn dot_tile_wide(w: &[u8], q: &Quantized, first: usize, t: usize, out: &mut [f32; TILE]) {
                match t {
                    1 => tile_wide::<1>(w, q, first, out),
                    2 => tile_wide::<2>(w, q, first, out),
                    3 => tile_wide::<3>(w, q, first, out),
                    4 => tile_wide::<4>(w, q, first, out),
                    _ => unreachable!("tile of {t} rows"),
                }
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn tile_wide<const T: usize>(w: &[u8], q: &Quantized, first: usize, out: &mut [f32; TILE]) {
                let mut acc = [_mm256_setzero_ps(); T];
                let per_row = q.cols / 32;
                let base: [usize; T] = std::array::from_fn(|i| (first + i) * per_row);
                let xs: [*const i8; T] = std::array::from_fn(|i| q.qs.as_ptr().add(base[i] * 32));
                let offsets: [*const __m256i; T] =
                    std::array::from_fn(|i| q.offset.as_ptr().add(base[i] * 8) as *const __m256i);
                let tile_d = q.tile_d.as_ptr().add(first / TILE * per_row * TILE);
                for (b, blk) in w.chunks_exact(super::super::WIDE).enumerate() {
                    let d = f32::from_le_bytes([blk[0], blk[1], blk[2], blk[3]]);
                    let mut dd = [0f32; TILE];
                    _mm_storeu_ps(dd.as_mut_ptr(), _mm_mul_ps(_mm_set1_ps(d), _mm_loadu_ps(tile_d.add(b * TILE))));
                    let wu = _mm256_loadu_si256(blk.as_ptr().add(4) as *const __m256i);
                    for i in 0..T {
                        let xv = _mm256_loadu_si256(xs[i].add(b * 32) as *const __m256i);
                        let s = _mm256_cvtepi32_ps($dp(_mm256_loadu_si256(offsets[i].add(b)), wu, xv));
                        acc[i] = _mm256_fmadd_ps(s, _mm256_set1_ps(dd[i]), acc[i]);
                    }
                }
                for i in 0..T {
                    out[i] = hsum(acc[i]);
                }
            }

            /// [`dot_tile`] of one activation row (`row`) with each of the weight rows in `w`
            /// (`rb` bytes each, one result per row in `out`), Q5_0 or Q8_0: the same
            /// arithmetic, four weight rows against each activation block.
            #[target_feature(enable = $features)]
            pub unsafe fn dot_rows(format: Format, w: &[u8], rb: usize, q: &Quantized, row: usize, out: &mut [f32]) {
                assert_eq!(w.len(), rb * out.len());
                for (w, out) in w.chunks(4 * rb).zip(out.chunks_mut(4)) {
                    match out.len() {
                        1 => rows_n::<1>(format, w, rb, q, row, out),
                        2 => rows_n::<2>(format, w, rb, q, row, out),
                        3 => rows_n::<3>(format, w, rb, q, row, out),
                        _ => rows_n::<4>(format, w, rb, q, row, out),
                    }
                }
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn rows_n<const R: usize>(
                format: Format,
                w: &[u8],
                rb: usize,
                q: &Quantized,
                row: usize,
                out: &mut [f32],
            ) {
                let per_row = q.cols / 32;
                let base = row * per_row;
                let (x, dx) = (q.qs.as_ptr().add(base * 32), q.d.as_ptr().add(base));
                let offset = q.offset.as_ptr().add(base * 8) as *const __m256i;
                let (low, sixteen) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(16));
                let mut acc = [_mm256_setzero_ps(); R];
                let q5 = format == Format::Q5_0;
                let bytes = if q5 { 22 } else { 34 };
                for b in 0..per_row {
                    let xv = _mm256_loadu_si256(x.add(b * 32) as *const __m256i);
                    let dxb = *dx.add(b);
                    for r in 0..R {
                        let blk = &w[r * rb + b * bytes..r * rb + (b + 1) * bytes];
                        _mm_prefetch::<_MM_HINT_T0>(blk.as_ptr().add(PREFETCH) as *const i8);
                        let scale = _mm256_set1_ps(f16(blk) * dxb);
                        let p = if q5 {
                            $dp(_mm256_loadu_si256(offset.add(b)), q5_0_unsigned(blk, low, sixteen), xv)
                        } else {
                            let wv = _mm256_loadu_si256(blk.as_ptr().add(2) as *const __m256i);
                            $dp(_mm256_setzero_si256(), _mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv))
                        };
                        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, acc[r]);
                    }
                }
                for r in 0..R {
                    out[r] = hsum(acc[r]);
                }
            }
        }
    };
}

int_kernels!(avx2, "avx2,fma,f16c", super::dp_avx2, false);
int_kernels!(vnni, "avx2,fma,f16c,avxvnni", super::dp_vnni, true);

/// `e^x` for each lane (Cephes' single-precision polynomial; relative error about 1e-7),
/// `x` clamped to ±88.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn exp(x: __m256) -> __m256 {
    let x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0)), _mm256_set1_ps(-88.0));
    let n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E), _mm256_set1_ps(0.5)));
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
    let mut y = _mm256_set1_ps(1.987_569_1e-4);
    for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5] {
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(c));
    }
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0)));
    let pow2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    _mm256_mul_ps(y, _mm256_castsi256_ps(pow2))
}

#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn gelu_mul(g: &mut [f32], x: &[f32]) {
    let n = g.len().min(x.len());
    let (k, c) = (_mm256_set1_ps(-2.0 * 0.797_884_6), _mm256_set1_ps(0.044715));
    let one = _mm256_set1_ps(1.0);
    let mut i = 0;
    while i + 8 <= n {
        let v = _mm256_loadu_ps(g.as_ptr().add(i));
        let u = _mm256_mul_ps(_mm256_mul_ps(k, v), _mm256_fmadd_ps(_mm256_mul_ps(c, v), v, one));
        let gv = _mm256_div_ps(v, _mm256_add_ps(one, exp(u)));
        _mm256_storeu_ps(g.as_mut_ptr().add(i), _mm256_mul_ps(gv, _mm256_loadu_ps(x.as_ptr().add(i))));
        i += 8;
    }
    for j in i..n {
        g[j] = super::gelu(g[j]) * x[j];
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn abs_max(x: &[f32]) -> f32 {
    let sign = _mm256_set1_ps(-0.0);
    let mut m = _mm256_setzero_ps();
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(c.as_ptr())));
    }
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), m);
    chunks.remainder().iter().chain(&lanes).fold(0f32, |a, v| a.max(v.abs()))
}

/// `x.len()` is a multiple of 32.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn scale_round(x: &[f32], id: f32, out: &mut [i8]) {
    let idv = _mm256_set1_ps(id);
    let (lo, hi) = (_mm256_set1_ps(-127.0), _mm256_set1_ps(127.0));
    let conv = |p: *const f32| {
        let v = _mm256_mul_ps(_mm256_loadu_ps(p), idv);
        let v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi))
    };
    for (c, o) in x.chunks_exact(32).zip(out.chunks_exact_mut(32)) {
        let p = c.as_ptr();
        let (a, b, cc, d) = (conv(p), conv(p.add(8)), conv(p.add(16)), conv(p.add(24)));
        // packs work per 128-bit lane: put the 32 bytes back in order.
        let ab = _mm256_packs_epi32(a, b);
        let cd = _mm256_packs_epi32(cc, d);
        let abcd = _mm256_packs_epi16(ab, cd);
        let ordered = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(o.as_mut_ptr() as *mut __m256i, ordered);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc0 = _mm256_setzero_ps();
    let mut acc1 = _mm256_setzero_ps();
    let mut i = 0;
    while i + 16 <= n {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)), acc1);
        i += 16;
    }
    while i + 8 <= n {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc0);
        i += 8;
    }
    let mut s = hsum(_mm256_add_ps(acc0, acc1));
    while i < n {
        s += a[i] * b[i];
        i += 1;
    }
    s
}

/// [`super::dots_f32`] for up to four heads.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dots(q: &[f32], k: &[f32], out: &mut [f32]) {
    match out.len() {
        1 => dots_n::<1>(q, k, out),
        2 => dots_n::<2>(q, k, out),
        3 => dots_n::<3>(q, k, out),
        4 => dots_n::<4>(q, k, out),
        n => unreachable!("{n} heads at once"),
    }
}

/// [`dot_f32`]'s arithmetic, per head: two accumulators over alternate runs of 8.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dots_n<const H: usize>(q: &[f32], k: &[f32], out: &mut [f32]) {
    let n = k.len();
    let (pq, pk) = (q.as_ptr(), k.as_ptr());
    let mut acc0 = [_mm256_setzero_ps(); H];
    let mut acc1 = [_mm256_setzero_ps(); H];
    let mut i = 0;
    while i + 16 <= n {
        let (k0, k1) = (_mm256_loadu_ps(pk.add(i)), _mm256_loadu_ps(pk.add(i + 8)));
        for h in 0..H {
            acc0[h] = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(h * n + i)), k0, acc0[h]);
            acc1[h] = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(h * n + i + 8)), k1, acc1[h]);
        }
        i += 16;
    }
    if i + 8 <= n {
        let k0 = _mm256_loadu_ps(pk.add(i));
        for h in 0..H {
            acc0[h] = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(h * n + i)), k0, acc0[h]);
        }
        i += 8;
    }
    for h in 0..H {
        let mut s = hsum(_mm256_add_ps(acc0[h], acc1[h]));
        for j in i..n {
            s += q[h * n + j] * k[j];
        }
        out[h] = s;
    }
}

/// [`super::weighted_rows`] for up to four heads (`out.len() / hd` of them).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn weighted_rows(out: &mut [f32], hd: usize, w: &[f32], n: usize, v: &[f32], stride: usize) {
    match out.len() / hd {
        1 => weighted_n::<1>(out, hd, w, n, v, stride),
        2 => weighted_n::<2>(out, hd, w, n, v, stride),
        3 => weighted_n::<3>(out, hd, w, n, v, stride),
        4 => weighted_n::<4>(out, hd, w, n, v, stride),
        h => unreachable!("{h} heads at once"),
    }
}

/// [`axpy`]'s arithmetic (`fma(a, x, y)` per value, in order of the rows), 16 values of every
/// head kept in registers over all the rows.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn weighted_n<const H: usize>(out: &mut [f32], hd: usize, w: &[f32], n: usize, v: &[f32], stride: usize) {
    let (pw, pv, po) = (w.as_ptr(), v.as_ptr(), out.as_mut_ptr());
    let mut d = 0;
    while d + 16 <= hd {
        let mut acc = [[_mm256_setzero_ps(); 2]; H];
        for j in 0..n {
            let row = pv.add(j * stride + d);
            let (v0, v1) = (_mm256_loadu_ps(row), _mm256_loadu_ps(row.add(8)));
            for h in 0..H {
                let a = _mm256_broadcast_ss(&*pw.add(h * n + j));
                acc[h][0] = _mm256_fmadd_ps(a, v0, acc[h][0]);
                acc[h][1] = _mm256_fmadd_ps(a, v1, acc[h][1]);
            }
        }
        for h in 0..H {
            _mm256_storeu_ps(po.add(h * hd + d), acc[h][0]);
            _mm256_storeu_ps(po.add(h * hd + d + 8), acc[h][1]);
        }
        d += 16;
    }
    if d + 8 <= hd {
        let mut acc = [_mm256_setzero_ps(); H];
        for j in 0..n {
            let v0 = _mm256_loadu_ps(pv.add(j * stride + d));
            for h in 0..H {
                acc[h] = _mm256_fmadd_ps(_mm256_broadcast_ss(&*pw.add(h * n + j)), v0, acc[h]);
            }
        }
        for h in 0..H {
            _mm256_storeu_ps(po.add(h * hd + d), acc[h]);
        }
        d += 8;
    }
    for h in 0..H {
        for e in d..hd {
            let mut y = 0f32;
            for j in 0..n {
                y += w[h * n + j] * v[j * stride + e];
            }
            out[h * hd + e] = y;
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    let n = y.len().min(x.len());
    let av = _mm256_set1_ps(a);
    let (py, px) = (y.as_mut_ptr(), x.as_ptr());
    let mut i = 0;
    while i + 8 <= n {
        _mm256_storeu_ps(py.add(i), _mm256_fmadd_ps(av, _mm256_loadu_ps(px.add(i)), _mm256_loadu_ps(py.add(i))));
        i += 8;
    }
    while i < n {
        y[i] += a * x[i];
        i += 1;
    }
}
