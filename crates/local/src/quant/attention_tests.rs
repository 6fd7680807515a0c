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
    tests::simd_covered();
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
                    assert_eq!(
                        out[i * rows + r].to_bits(),
                        one[i - first].to_bits(),
                        "{dtype:?} n={n} row {i} col {r}"
                    );
                }
            }
        }
    }
}

#[test]
fn grouped_heads_equal_the_one_head_helpers_to_the_bit() {
    tests::simd_covered();
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
