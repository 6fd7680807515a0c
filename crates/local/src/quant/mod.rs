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
        let mut q =
            Quantized { cols, qs: vec![0; x.len()], d: vec![0.0; blocks], sums: vec![0; blocks], ..Default::default() };
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
                || !(is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
                    && is_x86_feature_detected!("f16c"))
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
mod simd;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod attention_tests;
