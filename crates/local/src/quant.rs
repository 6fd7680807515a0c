//! Quantized matrices used as stored, and the matrix products of the embedded engine.
//!
//! A weight matrix keeps its GGUF blocks as they are in the file (Q8_0, Q5_0, Q4_K, Q6_K): a decoding
//! step reads every weight once, so the bytes read decide the speed, and expanding them to f32 or
//! to `i8` would read two to seven times more. Any other type is expanded to f32 at load. Q5_0
//! matrices also keep an unpacked copy for prompts, whose products are bound by arithmetic
//! (the `wide` field of [`QMatrix`]).
//!
//! The activations are quantized to 8 bits before a product, as llama.cpp does: per 32 values (one
//! scale each, computed once per [`Acts`]) for Q8_0 and Q5_0 weights, per 256 values for the K-quants. A
//! weight block then meets its activation block as an integer dot product, scaled once per block.
//!
//! Every kernel has a portable version and an AVX2+FMA+F16C one (the integer products also an
//! AVX-VNNI one, summing the same integers), picked at run time
//! ([`std::is_x86_feature_detected`]): a binary built on one x86-64 machine runs on another with
//! fewer extensions. Both sum the same integers per block, so they differ only in the order of the
//! float additions (tested below).
//!
//! [`QMatrix::matmul`] splits the weight rows over rayon's threads and, inside a task, multiplies
//! each weight block with up to [`TILE`] activation rows while it is in registers: a batch of
//! sequences (or a prompt) reads the weights once.

use candle_core::quantized::{GgmlDType, QTensor};
use rayon::prelude::*;

/// Values per block of the activations (and of Q8_0/Q5_0 weights).
pub const BLOCK: usize = 32;
/// Values per K-quant super-block.
pub const SUPER: usize = 256;
/// Activation rows multiplied with one weight block at a time.
pub const TILE: usize = 4;
/// Weight rows multiplied with one tile of activation rows before the next tile.
const ROW_GROUP: usize = 16;

/// The stored formats a matrix keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Q8_0,
    Q5_0,
    Q4K,
    Q6K,
    /// Anything else, expanded at load.
    F32,
}

impl Format {
    fn of(dtype: GgmlDType) -> Format {
        match dtype {
            GgmlDType::Q8_0 => Format::Q8_0,
            GgmlDType::Q5_0 => Format::Q5_0,
            GgmlDType::Q4K => Format::Q4K,
            GgmlDType::Q6K => Format::Q6K,
            _ => Format::F32,
        }
    }

    /// (values, bytes) of one stored block.
    fn block(self) -> (usize, usize) {
        match self {
            Format::Q8_0 => (BLOCK, 34),
            Format::Q5_0 => (BLOCK, 22),
            Format::Q4K => (SUPER, 144),
            Format::Q6K => (SUPER, 210),
            Format::F32 => (1, 4),
        }
    }

    /// Whether the activations are quantized per 256 values (llama.cpp's Q8_K) for this format.
    fn per_super(self) -> bool {
        matches!(self, Format::Q4K | Format::Q6K)
    }
}

/// A `rows × cols` weight matrix (GGUF's `[cols, rows]` tensor: rows of `cols` values).
pub struct QMatrix {
    rows: usize,
    cols: usize,
    format: Format,
    /// The stored blocks, row by row (`Format::F32`: empty).
    data: Vec<u8>,
    /// `Format::F32` only: the values, row by row.
    dense: Vec<f32>,
    /// Q5_0 with the SIMD kernels only: each block as its scale (f32) and its 32 values as
    /// unsigned bytes, [`WIDE`] bytes, row by row. Products of more activation rows than a tile
    /// (prompts) are bound by arithmetic, not by the bytes read, and these blocks need no
    /// unpacking; decoding steps (one row, or a batch's few) read the stored blocks.
    wide: Vec<u8>,
}

/// Bytes of a Q5_0 block in `QMatrix::wide`.
const WIDE: usize = 36;

impl std::fmt::Debug for QMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QMatrix({} x {}, {:?})", self.rows, self.cols, self.format)
    }
}

impl QMatrix {
    /// The matrix of a 2-D GGUF tensor. Q8_0, Q5_0, Q4_K and Q6_K stay as stored when each row is
    /// a whole number of blocks; anything else is expanded to f32.
    pub fn from_qtensor(t: &QTensor) -> candle_core::Result<QMatrix> {
        let &[rows, cols] = t.shape().dims() else {
            candle_core::bail!("a weight matrix must have 2 dimensions, not {:?}", t.shape().dims())
        };
        let format = Format::of(t.dtype());
        let (values, bytes) = format.block();
        if format != Format::F32 && cols % values == 0 {
            let data = t.data()?.into_owned();
            if data.len() != rows * cols / values * bytes {
                candle_core::bail!("{:?} tensor of {rows}x{cols} has {} bytes", t.dtype(), data.len());
            }
            let wide = if format == Format::Q5_0 && has_avx2() {
                let mut wide = vec![0u8; data.len() / 22 * WIDE];
                wide.par_chunks_mut(WIDE * 256).zip(data.par_chunks(22 * 256)).for_each(|(wide, data)| {
                    for (w, blk) in wide.chunks_exact_mut(WIDE).zip(data.chunks_exact(22)) {
                        w[..4].copy_from_slice(&f16(blk).to_le_bytes());
                        w[4..].copy_from_slice(&q5_0_values(blk));
                    }
                });
                wide
            } else {
                Vec::new()
            };
            return Ok(QMatrix { rows, cols, format, data, dense: Vec::new(), wide });
        }
        let dense = t.dequantize(&candle_core::Device::Cpu)?.flatten_all()?.to_vec1::<f32>()?;
        Ok(QMatrix { rows, cols, format: Format::F32, data: Vec::new(), dense, wide: Vec::new() })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn format(&self) -> Format {
        self.format
    }

    fn row_bytes(&self) -> usize {
        let (values, bytes) = self.format.block();
        self.cols / values * bytes
    }

    /// Row `r` as f32 into `out` (`cols` values), exactly as dequantizing the matrix gives it.
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        assert!(r < self.rows && out.len() == self.cols);
        if self.format == Format::F32 {
            out.copy_from_slice(&self.dense[r * self.cols..(r + 1) * self.cols]);
            return;
        }
        let rb = self.row_bytes();
        dequantize_row(self.format, &self.data[r * rb..(r + 1) * rb], out);
    }

    /// `out[m][r] = Σ_k self[r][k] · x[m][k]` for every activation row `m`: `out` is `x.rows() × rows`.
    pub fn matmul(&self, x: &Acts, out: &mut [f32]) {
        matmuls(x, &mut [(self, out)]);
    }

    /// Rows `first..first + n` against every activation row, into `out[i * rows + r]`.
    fn rows_into(&self, first: usize, n: usize, x: &Acts, q: Option<&Quantized>, out: &SharedOut, kernel: Kernel) {
        let m = x.rows;
        let put = |i: usize, r: usize, v: f32| {
            debug_assert!(i < m && r < self.rows);
            // SAFETY: `out` has `m × rows` values, and each (i, r) is written by the one task
            // that owns row r.
            unsafe { *out.0.add(i * self.rows + r) = v };
        };
        if self.format == Format::F32 {
            for r in first..first + n {
                let w = &self.dense[r * self.cols..(r + 1) * self.cols];
                for i in 0..m {
                    put(i, r, dot_f32(w, x.row_f32(i), kernel != Kernel::Portable));
                }
            }
            return;
        }
        let q = q.expect("quantized activations for a quantized matrix");
        let rb = self.row_bytes();
        // A group of weight rows meets each tile of activation rows in turn: both stay in the
        // first-level cache while they are multiplied.
        for group in (first..first + n).step_by(ROW_GROUP) {
            let mut i = 0;
            while i < m {
                let t = (m - i).min(TILE);
                let end = (group + ROW_GROUP).min(first + n);
                #[cfg(target_arch = "x86_64")]
                if t == 1 && kernel != Kernel::Portable && matches!(self.format, Format::Q5_0 | Format::Q8_0) {
                    // One activation row (decoding): several weight rows per call.
                    let mut sums = [0f32; ROW_GROUP];
                    let (w, part) = (&self.data[group * rb..end * rb], &mut sums[..end - group]);
                    // SAFETY: `kernel()` picks Avx2 only where the CPU has AVX2, FMA and F16C, and
                    // Vnni only where it also has AVX-VNNI; the rows are within the matrix.
                    unsafe {
                        if kernel == Kernel::Vnni {
                            simd::vnni::dot_rows(self.format, w, rb, q, i, part)
                        } else {
                            simd::avx2::dot_rows(self.format, w, rb, q, i, part)
                        }
                    };
                    for (r, &v) in (group..end).zip(&sums) {
                        put(i, r, v);
                    }
                    i += 1;
                    continue;
                }
                for r in group..end {
                    let mut sums = [0f32; TILE];
                    // More rows than a tile (a prompt): arithmetic decides, the wide copy is
                    // faster; up to a tile (decoding steps of a batch): the bytes read do.
                    if m > TILE && !self.wide.is_empty() {
                        let wb = self.cols / BLOCK * WIDE;
                        dot_tile_wide(&self.wide[r * wb..(r + 1) * wb], q, i, t, &mut sums, kernel);
                    } else {
                        dot_tile(self.format, &self.data[r * rb..(r + 1) * rb], q, i, t, &mut sums, kernel);
                    }
                    for (j, &v) in sums[..t].iter().enumerate() {
                        put(i + j, r, v);
                    }
                }
                i += t;
            }
        }
    }
}

/// [`QMatrix::matmul`] of several matrices with the same activations, in one set of parallel tasks
/// (a decoding step's products are small: one hand-over to the threads instead of one each).
pub fn matmuls(x: &Acts, products: &mut [(&QMatrix, &mut [f32])]) {
    let m = x.rows;
    for (w, out) in products.iter() {
        assert_eq!(x.cols, w.cols, "activations of width {} for a matrix of {} columns", x.cols, w.cols);
        assert_eq!(out.len(), m * w.rows);
    }
    if m == 0 {
        return;
    }
    let kernel = kernel();
    // Tasks of whole weight rows; a task writes its rows' column of every activation row.
    let per_matrix = rayon::current_num_threads() * 4;
    let mut tasks = Vec::new();
    for (i, (w, _)) in products.iter().enumerate() {
        let chunk = w.rows.div_ceil(per_matrix).max(16);
        tasks.extend((0..w.rows).step_by(chunk).map(|first| (i, first, chunk.min(w.rows - first))));
    }
    // Quantized here, before the tasks start (it runs in parallel itself).
    let jobs: Vec<(&QMatrix, Option<&Quantized>, SharedOut)> = products
        .iter_mut()
        .map(|(w, out)| {
            let q = (w.format != Format::F32).then(|| x.quantized(w.format.per_super()));
            (&**w, q, SharedOut(out.as_mut_ptr()))
        })
        .collect();
    let run = |&(i, first, n): &(usize, usize, usize)| {
        let (w, q, out) = &jobs[i];
        w.rows_into(first, n, x, *q, out, kernel);
    };
    if tasks.len() == 1 {
        run(&tasks[0]);
    } else {
        tasks.par_iter().for_each(run);
    }
}

/// The result of a product, written by several tasks at disjoint places.
struct SharedOut(*mut f32);
// SAFETY: tasks write disjoint elements (see `QMatrix::rows_into`), and `matmul` outlives them.
unsafe impl Sync for SharedOut {}

/// Activation rows (`rows × cols` f32, row by row), quantized when a product first needs them:
/// per 32 values for Q8_0/Q5_0 weights, per 256 for the K-quants; each kind once, whatever the
/// number of matrices that take these rows.
pub struct Acts<'a> {
    rows: usize,
    cols: usize,
    f32s: &'a [f32],
    b: std::sync::OnceLock<Quantized>,
    k: std::sync::OnceLock<Quantized>,
}

/// 8-bit values, one scale per 32 values (repeated over a super-block for per-256 scales), and
/// the sum of each 32 values (for the minimums of Q4_K). For the SIMD kernels also: `offset`, per 4
/// values minus their sum times the offset of the weights' stored values (16 for Q5_0, per 32
/// values; 32 for Q6_K, per 256): a sum of products of the stored unsigned values starts from it;
/// and per 32 values the scales of each tile of [`TILE`] rows side by side (`tile_d`).
#[derive(Default)]
struct Quantized {
    cols: usize,
    qs: Vec<i8>,
    d: Vec<f32>,
    sums: Vec<i32>,
    offset: Vec<i32>,
    tile_d: Vec<f32>,
}

impl Quantized {
    /// `x` quantized in groups of `group` values (32 or 256), each with its own scale; rows in
    /// parallel.
    fn new(x: &[f32], cols: usize, group: usize) -> Quantized {
        let avx2 = has_avx2();
        let blocks = x.len() / BLOCK;
        let mut q = Quantized { cols, qs: vec![0; x.len()], d: vec![0.0; blocks], sums: vec![0; blocks], ..Default::default() };
        let per_row = cols / BLOCK;
        q.qs.par_chunks_mut(cols)
            .zip(q.d.par_chunks_mut(per_row))
            .zip(q.sums.par_chunks_mut(per_row))
            .zip(x.par_chunks(cols))
            .for_each(|(((qs, d), sums), x)| quantize_row(x, group, qs, d, sums, avx2));
        if avx2 {
            let by = if group == BLOCK { -16 } else { -32 };
            q.offset = vec![0; x.len() / 4];
            q.offset.par_chunks_mut(cols / 4).zip(q.qs.par_chunks(cols)).for_each(|(offset, qs)| {
                for (o, four) in offset.iter_mut().zip(qs.chunks_exact(4)) {
                    *o = by * four.iter().map(|&v| v as i32).sum::<i32>();
                }
            });
        }
        if group == BLOCK && avx2 {
            let rows = x.len() / cols;
            q.tile_d = vec![0.0; rows.div_ceil(TILE) * per_row * TILE];
            for (r, d) in q.d.chunks_exact(per_row).enumerate() {
                for (b, &v) in d.iter().enumerate() {
                    q.tile_d[((r / TILE) * per_row + b) * TILE + r % TILE] = v;
                }
            }
        }
        q
    }

    fn block(&self, row: usize, b: usize) -> (&[i8], f32, i32) {
        let per_row = self.cols / BLOCK;
        let i = row * per_row + b;
        (&self.qs[i * BLOCK..(i + 1) * BLOCK], self.d[i], self.sums[i])
    }
}

/// One row: per group its scale (llama.cpp's Q8_0 rule for 32, Q8_K's for 256), values and sums.
fn quantize_row(x: &[f32], group: usize, qs: &mut [i8], d: &mut [f32], sums: &mut [i32], avx2: bool) {
    for (gi, (g, out)) in x.chunks(group).zip(qs.chunks_mut(group)).enumerate() {
        let amax = abs_max(g, avx2);
        let (scale, id) = if amax == 0.0 || !amax.is_finite() {
            (0.0, 0.0)
        } else if group == BLOCK {
            // Q8_0: scale amax / 127.
            let scale = amax / 127.0;
            (scale, 1.0 / scale)
        } else {
            // Q8_K: the value of largest magnitude, with its sign, maps to -127.
            let max = g.iter().copied().find(|v| v.abs() == amax).unwrap_or(amax);
            (max / -127.0, -127.0 / max)
        };
        scale_round(g, id, out, avx2);
        let per = group / BLOCK;
        for (j, b) in out.chunks(BLOCK).enumerate() {
            d[gi * per + j] = scale;
            sums[gi * per + j] = b.iter().map(|&q| q as i32).sum();
        }
    }
}

impl<'a> Acts<'a> {
    /// The rows of `x`, `cols` values each.
    pub fn new(x: &'a [f32], cols: usize) -> Acts<'a> {
        assert!(cols > 0 && x.len() % cols == 0, "{} values are not rows of {cols}", x.len());
        Acts { rows: x.len() / cols, cols, f32s: x, b: Default::default(), k: Default::default() }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    fn row_f32(&self, i: usize) -> &[f32] {
        &self.f32s[i * self.cols..(i + 1) * self.cols]
    }

    /// The rows quantized per 32 values, or per 256 (`per_super`).
    fn quantized(&self, per_super: bool) -> &Quantized {
        let (cell, group) = if per_super { (&self.k, SUPER) } else { (&self.b, BLOCK) };
        assert!(self.cols % group == 0, "rows of {} values cannot be quantized per {group}", self.cols);
        cell.get_or_init(|| Quantized::new(self.f32s, self.cols, group))
    }
}

fn f16(bytes: &[u8]) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f32()
}

/// Q4_K's 6-bit scale and minimum of sub-block `j` (0..8).
fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// The 32 values of Q5_0 block `blk` as unsigned 0..31 (the weight is `d · (q - 16)`).
fn q5_0_values(blk: &[u8]) -> [u8; 32] {
    let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
    let qs = &blk[6..22];
    let mut q = [0u8; 32];
    for j in 0..16 {
        q[j] = (qs[j] & 0x0F) | ((((qh >> j) & 1) as u8) << 4);
        q[j + 16] = (qs[j] >> 4) | ((((qh >> (j + 16)) & 1) as u8) << 4);
    }
    q
}

/// The 32 values of 32-block `k` (0..4) of half `n` (0..2) of a Q6_K super-block, as unsigned
/// 0..63 (the weight is `d · scale · (q - 32)`).
fn q6k_values(sb: &[u8], n: usize, k: usize) -> [u8; 32] {
    let ql = &sb[64 * n + 32 * (k & 1)..];
    let qh = &sb[128 + 32 * n..];
    let mut q = [0u8; 32];
    for l in 0..32 {
        let low = if k < 2 { ql[l] & 0x0F } else { ql[l] >> 4 };
        q[l] = low | (((qh[l] >> (2 * k)) & 3) << 4);
    }
    q
}

/// One stored row as f32 (the formats' definitions; the reference the kernels are tested against).
fn dequantize_row(format: Format, row: &[u8], out: &mut [f32]) {
    match format {
        Format::Q8_0 => {
            for (blk, o) in row.chunks_exact(34).zip(out.chunks_exact_mut(BLOCK)) {
                let d = f16(blk);
                for (o, &q) in o.iter_mut().zip(&blk[2..]) {
                    *o = q as i8 as f32 * d;
                }
            }
        }
        Format::Q5_0 => {
            for (blk, o) in row.chunks_exact(22).zip(out.chunks_exact_mut(BLOCK)) {
                let d = f16(blk);
                for (o, q) in o.iter_mut().zip(q5_0_values(blk)) {
                    *o = (q as i32 - 16) as f32 * d;
                }
            }
        }
        Format::Q4K => {
            for (sb, o) in row.chunks_exact(144).zip(out.chunks_exact_mut(SUPER)) {
                let (d, dmin) = (f16(sb), f16(&sb[2..]));
                let (scales, qs) = (&sb[4..16], &sb[16..144]);
                for j in 0..8 {
                    let (sc, m) = scale_min_k4(j, scales);
                    let (a, b) = (d * sc as f32, dmin * m as f32);
                    let q = &qs[32 * (j / 2)..32 * (j / 2) + 32];
                    for l in 0..32 {
                        let v = if j % 2 == 0 { q[l] & 0x0F } else { q[l] >> 4 };
                        o[32 * j + l] = a * v as f32 - b;
                    }
                }
            }
        }
        Format::Q6K => {
            for (sb, o) in row.chunks_exact(210).zip(out.chunks_exact_mut(SUPER)) {
                let d = f16(&sb[208..]);
                for n in 0..2 {
                    for k in 0..4 {
                        let q = q6k_values(sb, n, k);
                        for l in 0..32 {
                            let sc = sb[192 + 8 * n + 2 * k + l / 16] as i8;
                            o[128 * n + 32 * k + l] = d * sc as f32 * (q[l] as i32 - 32) as f32;
                        }
                    }
                }
            }
        }
        Format::F32 => unreachable!("f32 rows are not stored as blocks"),
    }
}

/// The kernels of the integer products, picked once per process from what the CPU has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    /// Plain Rust: any CPU.
    Portable,
    /// AVX2, FMA and F16C.
    Avx2,
    /// The same with AVX-VNNI: a block's 8-bit products summed into 32-bit lanes in one
    /// instruction (`vpdpbusd`) instead of two; the same integers, so the same results to the bit.
    Vnni,
}

/// `H2HTALK_LOCAL_PORTABLE=1` forces the portable kernels, `H2HTALK_LOCAL_VNNI=0` the AVX2 ones.
fn kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static KERNEL: OnceLock<Kernel> = OnceLock::new();
        *KERNEL.get_or_init(|| {
            let off = |var: &str, value: &str| std::env::var(var).is_ok_and(|v| v == value);
            if off("H2HTALK_LOCAL_PORTABLE", "1")
                || !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c"))
            {
                Kernel::Portable
            } else if !off("H2HTALK_LOCAL_VNNI", "0") && is_x86_feature_detected!("avxvnni") {
                Kernel::Vnni
            } else {
                Kernel::Avx2
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    Kernel::Portable
}

fn has_avx2() -> bool {
    kernel() != Kernel::Portable
}

/// Dot products of one stored weight row with activation rows `first..first + t` (`t <= TILE`).
fn dot_tile(format: Format, w: &[u8], q: &Quantized, first: usize, t: usize, out: &mut [f32; TILE], kernel: Kernel) {
    match kernel {
        // SAFETY: `kernel()` picks Avx2 only where the CPU has AVX2, FMA and F16C, and Vnni only
        // where it also has AVX-VNNI.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { simd::avx2::dot_tile(format, w, q, first, t, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Vnni => unsafe { simd::vnni::dot_tile(format, w, q, first, t, out) },
        _ => portable_dot_tile(format, w, q, first, t, out),
    }
}

/// [`dot_tile`] of a row of `QMatrix::wide` (Q5_0 with the SIMD kernels): the same sums.
fn dot_tile_wide(w: &[u8], q: &Quantized, first: usize, t: usize, out: &mut [f32; TILE], kernel: Kernel) {
    match kernel {
        // SAFETY: as in `dot_tile`.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { simd::avx2::dot_tile_wide(w, q, first, t, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Vnni => unsafe { simd::vnni::dot_tile_wide(w, q, first, t, out) },
        _ => unreachable!("wide rows are made for the SIMD kernels only"),
    }
}

fn idot(w: &[u8], x: &[i8], offset: i32) -> i32 {
    w.iter().zip(x).map(|(&w, &x)| (w as i32 - offset) * x as i32).sum()
}

fn portable_dot_tile(format: Format, w: &[u8], q: &Quantized, first: usize, t: usize, out: &mut [f32; TILE]) {
    for (i, o) in out.iter_mut().enumerate().take(t) {
        let row = first + i;
        let mut acc = 0f32;
        match format {
            Format::Q8_0 => {
                for (b, blk) in w.chunks_exact(34).enumerate() {
                    let (x, dx, _) = q.block(row, b);
                    let s: i32 = blk[2..].iter().zip(x).map(|(&w, &x)| w as i8 as i32 * x as i32).sum();
                    acc += f16(blk) * dx * s as f32;
                }
            }
            Format::Q5_0 => {
                for (b, blk) in w.chunks_exact(22).enumerate() {
                    let (x, dx, _) = q.block(row, b);
                    acc += f16(blk) * dx * idot(&q5_0_values(blk), x, 16) as f32;
                }
            }
            Format::Q4K => {
                for (s, sb) in w.chunks_exact(144).enumerate() {
                    let (d, dmin) = (f16(sb), f16(&sb[2..]));
                    for j in 0..8 {
                        let (sc, m) = scale_min_k4(j, &sb[4..16]);
                        let (x, dx, sum) = q.block(row, s * 8 + j);
                        let qs = &sb[16 + 32 * (j / 2)..16 + 32 * (j / 2) + 32];
                        let v: i32 = qs
                            .iter()
                            .zip(x)
                            .map(|(&b, &x)| (if j % 2 == 0 { b & 0x0F } else { b >> 4 }) as i32 * x as i32)
                            .sum();
                        acc += dx * (d * sc as f32 * v as f32 - dmin * m as f32 * sum as f32);
                    }
                }
            }
            Format::Q6K => {
                for (s, sb) in w.chunks_exact(210).enumerate() {
                    let d = f16(&sb[208..]);
                    for n in 0..2 {
                        for k in 0..4 {
                            let (x, dx, _) = q.block(row, s * 8 + n * 4 + k);
                            let vals = q6k_values(sb, n, k);
                            let lo = sb[192 + 8 * n + 2 * k] as i8 as i32;
                            let hi = sb[192 + 8 * n + 2 * k + 1] as i8 as i32;
                            let v = lo * idot(&vals[..16], &x[..16], 32) + hi * idot(&vals[16..], &x[16..], 32);
                            acc += d * dx * v as f32;
                        }
                    }
                }
            }
            Format::F32 => unreachable!(),
        }
        *o = acc;
    }
}

/// `x · gelu(g)` in place of `g`: GELU with the tanh approximation (`gelu_pytorch_tanh`), written
/// as `g / (1 + exp(-2u))`, `u = sqrt(2/π)(g + 0.044715 g³)`, which equals `0.5 g (1 + tanh(u))`.
pub fn gelu_mul(g: &mut [f32], x: &[f32], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU has AVX2 and FMA.
        unsafe { simd::gelu_mul(g, x) };
        return;
    }
    let _ = avx2;
    for (g, &x) in g.iter_mut().zip(x) {
        *g = gelu(*g) * x;
    }
}

fn gelu(v: f32) -> f32 {
    const SQRT_TWO_OVER_PI: f32 = 0.797_884_6;
    let u = SQRT_TWO_OVER_PI * v * (1.0 + 0.044715 * v * v);
    v / (1.0 + (-2.0 * u).min(88.0).exp())
}

/// The largest `|x|`.
fn abs_max(x: &[f32], avx2: bool) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU has AVX2.
        return unsafe { simd::abs_max(x) };
    }
    let _ = avx2;
    x.iter().fold(0f32, |a, v| a.max(v.abs()))
}

/// `out[i] = round(x[i] · id)` (ties to even), within ±127.
fn scale_round(x: &[f32], id: f32, out: &mut [i8], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 && x.len() % 32 == 0 {
        // SAFETY: `avx2` is true only when the CPU has AVX2.
        unsafe { simd::scale_round(x, id, out) };
        return;
    }
    let _ = avx2;
    for (o, &v) in out.iter_mut().zip(x) {
        *o = (v * id).round_ties_even().clamp(-127.0, 127.0) as i8;
    }
}

/// `Σ a[i] · b[i]` in f32.
pub fn dot_f32(a: &[f32], b: &[f32], avx2: bool) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU has AVX2 and FMA.
        return unsafe { simd::dot_f32(a, b) };
    }
    let _ = avx2;
    let mut lanes = [0f32; 8];
    let n = a.len().min(b.len());
    for (ca, cb) in a[..n].chunks_exact(8).zip(b[..n].chunks_exact(8)) {
        for l in 0..8 {
            lanes[l] += ca[l] * cb[l];
        }
    }
    let mut s: f32 = lanes.iter().sum();
    for i in n / 8 * 8..n {
        s += a[i] * b[i];
    }
    s
}

/// `y[i] += a · x[i]`.
pub fn axpy(y: &mut [f32], a: f32, x: &[f32], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU has AVX2 and FMA.
        unsafe { simd::axpy(y, a, x) };
        return;
    }
    let _ = avx2;
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// `out[h] = dot_f32(q_h, k)` for the heads `q_h`, `q`'s consecutive runs of `k.len()` values
/// (attention scores of query heads that share a key): each key is read once for all the heads,
/// and every result equals [`dot_f32`]'s to the bit.
pub fn dots_f32(q: &[f32], k: &[f32], out: &mut [f32], avx2: bool) {
    let hd = k.len();
    assert_eq!(q.len(), out.len() * hd, "{} heads of {hd} values", out.len());
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        for (q, out) in q.chunks(4 * hd).zip(out.chunks_mut(4)) {
            // SAFETY: `avx2` is true only when the CPU has AVX2 and FMA; the lengths are checked.
            unsafe { simd::dots(q, k, out) };
        }
        return;
    }
    for (q, out) in q.chunks_exact(hd).zip(out) {
        *out = dot_f32(q, k, avx2);
    }
}

/// `out_h = Σ_j w[h·n + j] · v_j` for the heads `out_h` (`out`'s consecutive runs of `hd` values)
/// and the `n` rows `v_j = v[j·stride..][..hd]`, summed in order of `j`: an attention block's
/// weighted values, each value row read once for all the heads; every result equals a run of
/// [`axpy`] from zero to the bit.
pub fn weighted_rows(out: &mut [f32], hd: usize, w: &[f32], v: &[f32], stride: usize, avx2: bool) {
    let heads = out.len() / hd;
    assert_eq!(out.len(), heads * hd);
    let n = w.len() / heads.max(1);
    assert_eq!(w.len(), heads * n);
    if n == 0 {
        out.fill(0.0);
        return;
    }
    assert!((n - 1) * stride + hd <= v.len(), "{n} rows of stride {stride} in {} values", v.len());
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        for (out, w) in out.chunks_mut(4 * hd).zip(w.chunks(4 * n)) {
            // SAFETY: as above; the bounds are checked.
            unsafe { simd::weighted_rows(out, hd, w, n, v, stride) };
        }
        return;
    }
    out.fill(0.0);
    for (out, w) in out.chunks_exact_mut(hd).zip(w.chunks_exact(n)) {
        for (j, &a) in w.iter().enumerate() {
            axpy(out, a, &v[j * stride..j * stride + hd], avx2);
        }
    }
}

/// Whether to use the SIMD kernels: for callers outside this module ([`dot_f32`], [`axpy`]).
pub fn avx2() -> bool {
    has_avx2()
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_op_in_unsafe_fn)] // every function here is intrinsics, called only where the CPU has them
mod simd {
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
                pub unsafe fn dot_tile(format: Format, w: &[u8], q: &Quantized, first: usize, t: usize, out: &mut [f32; TILE]) {
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
                unsafe fn tile<const T: usize>(format: Format, w: &[u8], q: &Quantized, first: usize, out: &mut [f32; TILE]) {
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
                                _mm_storeu_ps(dd.as_mut_ptr(), _mm_mul_ps(_mm_set1_ps(d), _mm_loadu_ps(tile_d.add(b * TILE))));
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
                                    acc[i] = _mm256_sub_ps(acc[i], _mm256_setr_ps(dmin * dxi * m as f32, 0., 0., 0., 0., 0., 0., 0.));
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
                                        let ql = _mm256_loadu_si256(sb.as_ptr().add(64 * n + 32 * (k & 1)) as *const __m256i);
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
                unsafe fn rows_n<const R: usize>(format: Format, w: &[u8], rb: usize, q: &Quantized, row: usize, out: &mut [f32]) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    /// A `rows × cols` matrix of `dtype` quantized by candle from smooth pseudo-random values.
    fn matrix(dtype: GgmlDType, rows: usize, cols: usize, seed: u32) -> (QTensor, QMatrix) {
        let vals: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let h = (i as u32).wrapping_mul(2654435761).wrapping_add(seed.wrapping_mul(40503));
                ((h >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * if i % 7 == 0 { 3.0 } else { 1.0 }
            })
            .collect();
        let t = Tensor::from_vec(vals, (rows, cols), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, dtype).unwrap();
        let m = QMatrix::from_qtensor(&q).unwrap();
        (q, m)
    }

    fn values(rows: usize, cols: usize) -> Vec<f32> {
        (0..rows * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 40.0).collect()
    }

    #[test]
    fn rows_dequantize_as_candle_does() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q5_0, GgmlDType::Q4K, GgmlDType::Q6K] {
            let (q, m) = matrix(dtype, 3, 512, 1);
            assert_ne!(m.format(), Format::F32, "{dtype:?} is kept as stored");
            let want = q.dequantize(&Device::Cpu).unwrap().to_vec2::<f32>().unwrap();
            let mut row = vec![0f32; 512];
            for (r, want) in want.iter().enumerate() {
                m.row_into(r, &mut row);
                assert_eq!(&row, want, "{dtype:?} row {r}");
            }
        }
    }

    /// The products equal the f32 products of the expanded weights with the quantized activations
    /// (what the integer arithmetic computes exactly), up to the order of the float additions; the
    /// SIMD and portable kernels agree the same way; and any row count works (tiles and remainders).
    #[test]
    fn products_equal_the_expanded_arithmetic_on_both_kernels() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q5_0, GgmlDType::Q4K, GgmlDType::Q6K, GgmlDType::Q4_0] {
            let (rows, cols) = (37, 512);
            let (q, m) = matrix(dtype, rows, cols, 7);
            let w = q.dequantize(&Device::Cpu).unwrap().to_vec2::<f32>().unwrap();
            for n in [1, 3, 4, 9] {
                let x = values(n, cols);
                let a = Acts::new(&x, cols);
                // The activations as the kernels see them.
                let src = a.quantized(m.format().per_super());
                let xq: Vec<f32> = if m.format() == Format::F32 {
                    x.clone()
                } else {
                    (0..n * cols).map(|i| src.qs[i] as f32 * src.d[i / BLOCK]).collect()
                };
                let mut out = vec![0f32; n * rows];
                m.matmul(&a, &mut out);
                for i in 0..n {
                    for r in 0..rows {
                        let want: f64 =
                            w[r].iter().zip(&xq[i * cols..(i + 1) * cols]).map(|(&w, &x)| w as f64 * x as f64).sum();
                        let got = out[i * rows + r] as f64;
                        assert!(
                            (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                            "{dtype:?} n={n} row {i} col {r}: {got} vs {want}"
                        );
                    }
                }
                if m.format() != Format::F32 {
                    for r in 0..rows {
                        let rb = m.row_bytes();
                        let wr = &m.data[r * rb..(r + 1) * rb];
                        let mut i = 0;
                        while i < n {
                            let t = (n - i).min(TILE);
                            let (mut simd, mut portable) = ([0f32; TILE], [0f32; TILE]);
                            dot_tile(m.format(), wr, src, i, t, &mut simd, kernel());
                            portable_dot_tile(m.format(), wr, src, i, t, &mut portable);
                            for j in 0..t {
                                assert!(
                                    (simd[j] - portable[j]).abs() <= 1e-4 * (1.0 + portable[j].abs()),
                                    "{dtype:?}: {} vs {}",
                                    simd[j],
                                    portable[j]
                                );
                            }
                            i += t;
                        }
                    }
                }
            }
        }
    }

    /// The VNNI kernels sum the same integers as the AVX2 ones: every product is equal to the bit,
    /// for every stored format, tile size and the one-row kernel.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vnni_and_avx2_kernels_agree_to_the_bit() {
        if !(has_avx2() && is_x86_feature_detected!("avxvnni")) {
            let why = "this CPU (or H2HTALK_LOCAL_PORTABLE=1) leaves AVX-VNNI out: the VNNI kernels are not tested";
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why}");
            eprintln!("\n!!! SKIPPED: {why} !!!\n");
            return;
        }
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q5_0, GgmlDType::Q4K, GgmlDType::Q6K] {
            let (rows, cols) = (9, 512);
            let (_, m) = matrix(dtype, rows, cols, 11);
            let rb = m.row_bytes();
            for n in 1..=9 {
                // Activations of every magnitude, so that some blocks reach ±127.
                let x: Vec<f32> = values(n, cols).iter().enumerate().map(|(i, v)| v * (1 + i % 5) as f32).collect();
                let a = Acts::new(&x, cols);
                let q = a.quantized(m.format().per_super());
                for r in 0..rows {
                    let wr = &m.data[r * rb..(r + 1) * rb];
                    let mut i = 0;
                    while i < n {
                        let t = (n - i).min(TILE);
                        let (mut avx2, mut vnni) = ([0f32; TILE], [0f32; TILE]);
                        dot_tile(m.format(), wr, q, i, t, &mut avx2, Kernel::Avx2);
                        dot_tile(m.format(), wr, q, i, t, &mut vnni, Kernel::Vnni);
                        assert_eq!(avx2.map(f32::to_bits), vnni.map(f32::to_bits), "{dtype:?} n={n} rows {i}.. col {r}");
                        i += t;
                    }
                }
                if m.format() == Format::Q5_0 {
                    // The wide copy of Q5_0 rows gives the stored blocks' sums, on both kernels.
                    let wb = cols / BLOCK * WIDE;
                    for r in 0..rows {
                        let mut i = 0;
                        while i < n {
                            let t = (n - i).min(TILE);
                            let mut want = [0f32; TILE];
                            dot_tile(m.format(), &m.data[r * rb..(r + 1) * rb], q, i, t, &mut want, Kernel::Avx2);
                            for kernel in [Kernel::Avx2, Kernel::Vnni] {
                                let mut got = [0f32; TILE];
                                dot_tile_wide(&m.wide[r * wb..(r + 1) * wb], q, i, t, &mut got, kernel);
                                assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{kernel:?} wide n={n} col {r}");
                            }
                            i += t;
                        }
                    }
                }
                if matches!(m.format(), Format::Q5_0 | Format::Q8_0) {
                    for i in 0..n {
                        let (mut avx2, mut vnni) = (vec![0f32; rows], vec![0f32; rows]);
                        // SAFETY: the CPU has AVX2, FMA, F16C and AVX-VNNI (checked above).
                        unsafe {
                            simd::avx2::dot_rows(m.format(), &m.data, rb, q, i, &mut avx2);
                            simd::vnni::dot_rows(m.format(), &m.data, rb, q, i, &mut vnni);
                        }
                        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&avx2), bits(&vnni), "{dtype:?} one row {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn activations_quantize_as_llama_cpp_does() {
        let x: Vec<f32> = (0..256).map(|i| (i as f32 - 100.0) / 10.0).collect();
        let a = Acts::new(&x, 256);
        // Per 32: the largest magnitude maps to ±127.
        let (b, k) = (a.quantized(false), a.quantized(true));
        assert_eq!(b.qs[0], -127);
        assert!((b.d[0] - 10.0 / 127.0).abs() < 1e-7);
        // Per 256: the value of largest magnitude (15.5, positive) maps to -127, so d is negative.
        assert_eq!(k.qs[255], -127);
        assert!((k.d[0] + 15.5 / 127.0).abs() < 1e-7);
        assert_eq!(k.d.len(), 8, "one scale per 32 values, repeated over the super-block");
        assert_eq!(k.sums[0], k.qs[..32].iter().map(|&q| q as i32).sum::<i32>());
        // Many rows (quantized in parallel) give each row what it gives alone.
        let rows: Vec<f32> = (0..64 * 256).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / (1.0 + (i / 256) as f32)).collect();
        let all = Acts::new(&rows, 256);
        for (r, row) in rows.chunks(256).enumerate() {
            let one = Acts::new(row, 256);
            for per_super in [false, true] {
                let (many, alone) = (all.quantized(per_super), one.quantized(per_super));
                assert_eq!(&many.qs[r * 256..(r + 1) * 256], &alone.qs[..]);
                assert_eq!(&many.d[r * 8..(r + 1) * 8], &alone.d[..]);
            }
        }
        // All zeros: scale 0, values 0, no NaN.
        let zeros = [0.0; 32];
        let z = Acts::new(&zeros, 32);
        assert_eq!((z.quantized(false).d[0], z.quantized(false).qs[0]), (0.0, 0));
    }

    #[test]
    fn simd_and_portable_quantization_agree_exactly() {
        let x: Vec<f32> = (0..512).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 37.0 + if i == 77 { 0.5 } else { 0.0 }).collect();
        for id in [1.0f32, 2.0, 0.37, -3.1] {
            let (mut simd, mut portable) = (vec![0i8; 512], vec![0i8; 512]);
            scale_round(&x, id, &mut simd, has_avx2());
            scale_round(&x, id, &mut portable, false);
            assert_eq!(simd, portable, "id {id}");
        }
        assert_eq!(abs_max(&x, has_avx2()), abs_max(&x, false));
    }

    #[test]
    fn gelu_is_the_tanh_approximation_on_both_paths() {
        let g: Vec<f32> = (-400..400).map(|i| i as f32 / 37.0).chain([-100.0, 100.0, 0.0]).collect();
        let x: Vec<f32> = (0..g.len()).map(|i| 1.0 + (i % 5) as f32 * 0.25).collect();
        for simd in [false, has_avx2()] {
            let mut out = g.clone();
            gelu_mul(&mut out, &x, simd);
            for ((&o, &v), &x) in out.iter().zip(&g).zip(&x) {
                let want = 0.5 * v as f64 * (1.0 + (0.797_884_560_8 * (v as f64 + 0.044715 * (v as f64).powi(3))).tanh()) * x as f64;
                assert!((o as f64 - want).abs() <= 2e-6 * (1.0 + want.abs()), "gelu({v}) * {x}: {o} vs {want}");
            }
        }
    }

    #[test]
    fn f32_helpers_agree_with_plain_loops() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..37).map(|i| 1.0 - i as f32 * 0.25).collect();
        let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        for simd in [false, has_avx2()] {
            assert!((dot_f32(&a, &b, simd) - want).abs() < 1e-3);
            let mut y = b.clone();
            axpy(&mut y, 2.0, &a, simd);
            for i in 0..37 {
                assert!((y[i] - (b[i] + 2.0 * a[i])).abs() < 1e-5);
            }
        }
    }
}

#[cfg(test)]
mod attention_tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 20_000) as f32 / 10_000.0 - 1.0
            })
            .collect()
    }

    /// Several heads against one key, and one head's weighted value rows, equal the one-head
    /// helpers to the bit (the engine's greedy answers depend on it), for every head count and
    /// widths with every kind of tail, on both kernels.
    /// A product with one activation row (decoding; also the last row of a tile) runs several
    /// weight rows per call: each result equals the one-row kernel's to the bit.
    #[test]
    fn single_rows_equal_the_tile_kernel_to_the_bit() {
        for dtype in [candle_core::quantized::GgmlDType::Q8_0, candle_core::quantized::GgmlDType::Q5_0] {
            let (rows, cols) = (37, 640);
            let w: Vec<f32> = values(rows * cols, 3);
            let t = candle_core::quantized::QTensor::quantize(
                &candle_core::Tensor::from_vec(w, (rows, cols), &candle_core::Device::Cpu).unwrap(),
                dtype,
            )
            .unwrap();
            let m = QMatrix::from_qtensor(&t).unwrap();
            for n in [1, 5] {
                let x = values(n * cols, 5);
                let a = Acts::new(&x, cols);
                let mut out = vec![0f32; n * rows];
                m.matmul(&a, &mut out);
                let q = a.quantized(false);
                let rb = m.row_bytes();
                for i in 0..n {
                    let (first, t) = (i / TILE * TILE, (n - i / TILE * TILE).min(TILE));
                    for r in 0..rows {
                        let mut one = [0f32; TILE];
                        dot_tile(m.format(), &m.data[r * rb..(r + 1) * rb], q, first, t, &mut one, kernel());
                        assert_eq!(out[i * rows + r].to_bits(), one[i - first].to_bits(), "{dtype:?} n={n} row {i} col {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn grouped_heads_equal_the_one_head_helpers_to_the_bit() {
        for simd in [false, has_avx2()] {
            for hd in [256, 40, 37, 8, 5] {
                for heads in 1..=6 {
                    let q = values(heads * hd, (hd * 10 + heads) as u32);
                    let k = values(hd, 7);
                    let mut got = vec![0f32; heads];
                    dots_f32(&q, &k, &mut got, simd);
                    for h in 0..heads {
                        let want = dot_f32(&q[h * hd..(h + 1) * hd], &k, simd);
                        assert_eq!(got[h].to_bits(), want.to_bits(), "hd {hd}, {heads} heads, head {h}, simd {simd}");
                    }
                    for n in [1, 2, 9] {
                        let stride = hd + 3;
                        let v = values((n - 1) * stride + hd, 11);
                        let w = values(heads * n, 13);
                        let mut got = vec![f32::NAN; heads * hd];
                        weighted_rows(&mut got, hd, &w, &v, stride, simd);
                        for h in 0..heads {
                            let mut want = vec![0f32; hd];
                            for j in 0..n {
                                axpy(&mut want, w[h * n + j], &v[j * stride..j * stride + hd], simd);
                            }
                            let same = got[h * hd..(h + 1) * hd].iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(same, "hd {hd}, {heads} heads, {n} rows, head {h}, simd {simd}");
                        }
                    }
                }
            }
        }
    }
}
