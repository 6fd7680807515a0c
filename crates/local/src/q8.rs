//! Q8_0 and Q5_0 matrices used without expanding them to f32.
//!
//! Gemma 3's vocabulary is 262,144 tokens: its embedding matrix, which is also the output projection
//! (tied weights), is 168 M values. Expanded to f32 it is 671 MB, all read for every generated token;
//! as Q8_0 (one f32 scale per 32 `i8`) it is 189 MB. [`Q8Matrix`] keeps it so and computes
//! - the embedding rows: `q as f32 * d`, exactly what expanding the matrix gives, and
//! - the output logits: each row's dot product with the f32 activations, block by block, with
//!   AVX2 and FMA when the CPU has them (detected at run time, so a binary built on one x86-64 machine
//!   runs on another with fewer extensions), else portable code; rows are split over rayon's threads.
//!
//! Q5_0 (a 5-bit value and one f16 scale per 32) converts losslessly to the same form: its values
//! `q - 16` fit an `i8`, so the layers' Q5_0 projections are read as 1.125 bytes per weight, not 4.
//!
//! The activations stay f32 (llama.cpp quantizes them to Q8_0 first): results differ from the f32
//! matrix product of the expanded weights only in the order of the additions.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Result, Tensor};
use rayon::prelude::*;

const BLOCK: usize = 32;
/// Bytes of one stored Q8_0 block: an f16 scale and 32 `i8`.
const Q8_0_BYTES: usize = 34;
/// Bytes of one stored Q5_0 block: an f16 scale, 32 high bits, 32 low nibbles.
const Q5_0_BYTES: usize = 22;

/// A `rows × cols` Q8_0 matrix: the quantized values row by row, and one scale per 32 of them.
pub struct Q8Matrix {
    rows: usize,
    cols: usize,
    qs: Vec<i8>,
    scales: Vec<f32>,
}

impl std::fmt::Debug for Q8Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Q8Matrix({} x {})", self.rows, self.cols)
    }
}

impl Q8Matrix {
    /// The matrix of a 2-D Q8_0 or Q5_0 tensor (GGUF's `[rows, cols]`, rows of `cols` values);
    /// `None` for any other type or shape.
    pub fn from_qtensor(t: &QTensor) -> Result<Option<Q8Matrix>> {
        let &[rows, cols] = t.shape().dims() else { return Ok(None) };
        let block_bytes = match t.dtype() {
            GgmlDType::Q8_0 => Q8_0_BYTES,
            GgmlDType::Q5_0 => Q5_0_BYTES,
            _ => return Ok(None),
        };
        if cols % BLOCK != 0 {
            return Ok(None);
        }
        let data = t.data()?;
        let blocks = rows * cols / BLOCK;
        if data.len() != blocks * block_bytes {
            candle_core::bail!("{:?} tensor of {rows}x{cols} has {} bytes", t.dtype(), data.len());
        }
        let mut qs = Vec::with_capacity(rows * cols);
        let mut scales = Vec::with_capacity(blocks);
        for block in data.chunks_exact(block_bytes) {
            scales.push(half::f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32());
            if block_bytes == Q8_0_BYTES {
                qs.extend(block[2..].iter().map(|&b| b as i8));
            } else {
                // As candle's (and ggml's) dequantize_row_q5_0 reads it.
                let qh = u32::from_le_bytes([block[2], block[3], block[4], block[5]]);
                let nibbles = &block[6..];
                let low = nibbles.iter().enumerate().map(|(j, &q)| ((q & 0x0F) | ((((qh >> j) << 4) & 0x10) as u8)) as i8 - 16);
                let high: Vec<i8> =
                    nibbles.iter().enumerate().map(|(j, &q)| ((q >> 4) | (((qh >> (j + 12)) & 0x10) as u8)) as i8 - 16).collect();
                qs.extend(low);
                qs.extend(high);
            }
        }
        Ok(Some(Q8Matrix { rows, cols, qs, scales }))
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row `r` as f32 into `out`, exactly as dequantizing the whole matrix would give it.
    fn row_into(&self, r: usize, out: &mut [f32]) {
        let qs = &self.qs[r * self.cols..(r + 1) * self.cols];
        let scales = &self.scales[r * self.cols / BLOCK..(r + 1) * self.cols / BLOCK];
        for ((out, q), &d) in out.chunks_exact_mut(BLOCK).zip(qs.chunks_exact(BLOCK)).zip(scales) {
            for (o, &q) in out.iter_mut().zip(q) {
                *o = q as f32 * d;
            }
        }
    }

    /// The embedding of token ids `(b, s)`: `(b, s, cols)` f32.
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        let (b, s) = ids.dims2()?;
        let ids = ids.flatten_all()?.to_dtype(DType::U32)?.to_vec1::<u32>()?;
        let mut out = vec![0f32; ids.len() * self.cols];
        for (row, &id) in out.chunks_exact_mut(self.cols).zip(&ids) {
            let id = id as usize;
            if id >= self.rows {
                candle_core::bail!("token id {id} is outside the vocabulary of {}", self.rows);
            }
            self.row_into(id, row);
        }
        Tensor::from_vec(out, (b, s, self.cols), ids_device())
    }

    /// `x · selfᵀ`: `x` is `(.., cols)`, the result `(.., rows)` f32.
    pub fn matmul_t(&self, x: &Tensor) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        let Some((&k, lead)) = dims.split_last() else { candle_core::bail!("matmul_t of a scalar") };
        if k != self.cols {
            candle_core::bail!("matmul_t: activations of width {k}, matrix of {} columns", self.cols);
        }
        let xs = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let m = xs.len() / k;
        let mut out = vec![0f32; m * self.rows];
        self.matmul_t_into(&xs, m, &mut out);
        let mut shape = lead.to_vec();
        shape.push(self.rows);
        Tensor::from_vec(out, shape, ids_device())
    }

    /// `out[i * rows + r] = xs[i] · row r` for the `m` rows of `xs`.
    fn matmul_t_into(&self, xs: &[f32], m: usize, out: &mut [f32]) {
        if m == 1 {
            self.dots_by_row(xs, 1, out);
            return;
        }
        let mut by_row = vec![0f32; m * self.rows];
        self.dots_by_row(xs, m, &mut by_row);
        for r in 0..self.rows {
            for i in 0..m {
                out[i * self.rows + r] = by_row[r * m + i];
            }
        }
    }

    /// `by_row[r * m + i] = xs[i] · row r`. Weight rows in chunks, a few per thread; each row is used
    /// for every activation row while it is in cache.
    fn dots_by_row(&self, xs: &[f32], m: usize, by_row: &mut [f32]) {
        let dot = dot_fn();
        let k = self.cols;
        let chunk = self.rows.div_ceil(4 * rayon::current_num_threads()).max(32);
        by_row.par_chunks_mut(chunk * m).enumerate().for_each(|(c, part)| {
            for (j, outs) in part.chunks_exact_mut(m).enumerate() {
                let r = c * chunk + j;
                let qs = &self.qs[r * k..(r + 1) * k];
                let scales = &self.scales[r * k / BLOCK..(r + 1) * k / BLOCK];
                for (i, o) in outs.iter_mut().enumerate() {
                    *o = dot(qs, scales, &xs[i * k..(i + 1) * k]);
                }
            }
        });
    }
}

fn ids_device() -> &'static Device {
    &Device::Cpu
}

type DotFn = fn(&[i8], &[f32], &[f32]) -> f32;

/// The dot product for this CPU, chosen once.
fn dot_fn() -> DotFn {
    static DOT: std::sync::OnceLock<DotFn> = std::sync::OnceLock::new();
    *DOT.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return dot_avx2;
        }
        dot_portable
    })
}

/// Σ over blocks of `d · Σ q·x`, the blocks' inner sums in f32.
fn dot_portable(qs: &[i8], scales: &[f32], x: &[f32]) -> f32 {
    let mut acc = 0f32;
    for ((q, &d), x) in qs.chunks_exact(BLOCK).zip(scales).zip(x.chunks_exact(BLOCK)) {
        let mut lanes = [0f32; 8];
        for (q, x) in q.chunks_exact(8).zip(x.chunks_exact(8)) {
            for l in 0..8 {
                lanes[l] += q[l] as f32 * x[l];
            }
        }
        acc += d * lanes.iter().sum::<f32>();
    }
    acc
}

#[cfg(target_arch = "x86_64")]
fn dot_avx2(qs: &[i8], scales: &[f32], x: &[f32]) -> f32 {
    assert!(qs.len() == x.len() && qs.len() == scales.len() * BLOCK);
    // SAFETY: dot_fn returns this function only when the CPU has AVX2 and FMA; the lengths were
    // checked above, and the kernel reads only inside the three slices.
    unsafe { dot_avx2_kernel(qs, scales, x) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2_kernel(qs: &[i8], scales: &[f32], x: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = _mm256_setzero_ps();
    for (b, &d) in scales.iter().enumerate() {
        // SAFETY: block b covers qs[32b..32b+32] and x[32b..32b+32], inside the slices (checked by
        // the caller); the loads are unaligned loads.
        unsafe {
            let q = qs.as_ptr().add(b * BLOCK);
            let xp = x.as_ptr().add(b * BLOCK);
            let mut s = _mm256_setzero_ps();
            for g in 0..4 {
                let q8 = _mm_loadl_epi64(q.add(g * 8).cast::<__m128i>());
                let qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
                s = _mm256_fmadd_ps(qf, _mm256_loadu_ps(xp.add(g * 8)), s);
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), s, acc);
        }
    }
    let hi = _mm256_extractf128_ps(acc, 1);
    let lo = _mm256_castps256_ps128(acc);
    let s = _mm_add_ps(hi, lo);
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    _mm_cvtss_f32(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::QTensor;

    fn matrix(rows: usize, cols: usize) -> (Tensor, Q8Matrix) {
        let values: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * 3.0).collect();
        let t = Tensor::from_vec(values, (rows, cols), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, GgmlDType::Q8_0).unwrap();
        let dense = q.dequantize(&Device::Cpu).unwrap();
        (dense, Q8Matrix::from_qtensor(&q).unwrap().unwrap())
    }

    #[test]
    fn embedding_rows_equal_the_dequantized_matrix_exactly() {
        let (dense, m) = matrix(50, 96);
        let ids = Tensor::new(&[[3u32, 0, 49], [7, 7, 1]], &Device::Cpu).unwrap();
        let got = m.embed(&ids).unwrap();
        let want = candle_nn::Embedding::new(dense, 96);
        let want = candle_core::Module::forward(&want, &ids).unwrap();
        assert_eq!(got.to_vec3::<f32>().unwrap(), want.to_vec3::<f32>().unwrap());
    }

    #[test]
    fn logits_match_the_f32_product_and_both_kernels_agree() {
        let (dense, m) = matrix(3000, 640);
        let x: Vec<f32> = (0..2 * 640).map(|i| ((i * 31 % 97) as f32 - 48.0) / 40.0).collect();
        let xt = Tensor::from_vec(x.clone(), (2, 640), &Device::Cpu).unwrap();
        let got = m.matmul_t(&xt).unwrap().to_vec2::<f32>().unwrap();
        let want = xt.matmul(&dense.t().unwrap()).unwrap().to_vec2::<f32>().unwrap();
        for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
            assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{g} vs {w}");
        }
        for r in [0, 1, 2999] {
            let qs = &m.qs[r * 640..(r + 1) * 640];
            let sc = &m.scales[r * 20..(r + 1) * 20];
            let (a, b) = (dot_portable(qs, sc, &x[..640]), dot_fn()(qs, sc, &x[..640]));
            assert!((a - b).abs() <= 1e-4 * a.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn q5_0_values_equal_the_dequantized_ones_exactly() {
        let values: Vec<f32> = (0..8 * 64).map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * 2.0).collect();
        let t = Tensor::from_vec(values, (8, 64), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, GgmlDType::Q5_0).unwrap();
        let dense = q.dequantize(&Device::Cpu).unwrap();
        let m = Q8Matrix::from_qtensor(&q).unwrap().unwrap();
        let ids = Tensor::new(&[[0u32, 1, 2, 3, 4, 5, 6, 7]], &Device::Cpu).unwrap();
        let got = m.embed(&ids).unwrap().squeeze(0).unwrap();
        assert_eq!(got.to_vec2::<f32>().unwrap(), dense.to_vec2::<f32>().unwrap());
    }

    #[test]
    fn other_types_and_shapes_are_not_taken() {
        let t = Tensor::zeros((4, 64), DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, GgmlDType::Q4_0).unwrap();
        assert!(Q8Matrix::from_qtensor(&q).unwrap().is_none());
    }
}
