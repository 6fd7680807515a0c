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
    simd_covered();
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

/// The kernel the engine picks is the best this CPU runs, unless an environment variable
/// turns one off: a CPU with AVX2 (or AVX-VNNI) whose instructions the engine leaves unused
/// fails here, on any machine.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_engine_uses_what_the_cpu_has() {
    let set = |var: &str, value: &str| std::env::var(var).is_ok_and(|v| v == value);
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c");
    let want = if set("H2HTALK_LOCAL_PORTABLE", "1") || !avx2 {
        Kernel::Portable
    } else if is_x86_feature_detected!("avxvnni") && !set("H2HTALK_LOCAL_VNNI", "0") {
        Kernel::Vnni
    } else {
        Kernel::Avx2
    };
    assert_eq!(kernel(), want, "the CPU's instructions and the kernel the engine picked differ");
    eprintln!("local kernels: the engine uses {want:?} on this CPU");
}

/// Tests of SIMD code say loudly what this CPU leaves them unable to cover (they then compare
/// the portable path with itself); [`the_engine_uses_what_the_cpu_has`] fails where the CPU has
/// the instructions and the engine does not use them.
pub(super) fn simd_covered() -> bool {
    let covered = has_avx2();
    if !covered {
        eprintln!(
            "\n!!! NOT COVERED: this CPU (or H2HTALK_LOCAL_PORTABLE=1) leaves AVX2 out: the SIMD kernels are not tested here !!!\n"
        );
    }
    covered
}

/// The VNNI kernels sum the same integers as the AVX2 ones: every product is equal to the bit,
/// for every stored format, tile size and the one-row kernel. It needs a CPU with AVX-VNNI
/// (called directly, whatever `H2HTALK_LOCAL_VNNI` says); on another CPU it says loudly that it
/// covers nothing, and passes, since there is nothing the code could use.
#[cfg(target_arch = "x86_64")]
#[test]
fn vnni_and_avx2_kernels_agree_to_the_bit() {
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c");
    if !(avx2 && is_x86_feature_detected!("avxvnni")) {
        eprintln!(
            "\n!!! NOT COVERED: this CPU has no AVX-VNNI (AVX-512 VNNI is another extension): the VNNI kernels are not tested here !!!\n"
        );
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
    simd_covered();
    let x: Vec<f32> =
        (0..512).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 37.0 + if i == 77 { 0.5 } else { 0.0 }).collect();
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
    simd_covered();
    let g: Vec<f32> = (-400..400).map(|i| i as f32 / 37.0).chain([-100.0, 100.0, 0.0]).collect();
    let x: Vec<f32> = (0..g.len()).map(|i| 1.0 + (i % 5) as f32 * 0.25).collect();
    for simd in [false, has_avx2()] {
        let mut out = g.clone();
        gelu_mul(&mut out, &x, simd);
        for ((&o, &v), &x) in out.iter().zip(&g).zip(&x) {
            let want = 0.5
                * v as f64
                * (1.0 + (0.797_884_560_8 * (v as f64 + 0.044715 * (v as f64).powi(3))).tanh())
                * x as f64;
            assert!((o as f64 - want).abs() <= 2e-6 * (1.0 + want.abs()), "gelu({v}) * {x}: {o} vs {want}");
        }
    }
}

#[test]
fn f32_helpers_agree_with_plain_loops() {
    simd_covered();
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
