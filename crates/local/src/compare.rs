//! The engine's greedy tokens against another engine's (llama.cpp's) on the same prompt ids: how
//! many leading tokens of our own greedy answer equal theirs, and, feeding their tokens one by one
//! (teacher forcing), at how many positions our argmax is their token; where it is not, the gap
//! between our best logit and our logit for their token, which tells a near tie from a different
//! answer. `scripts/greedy-vs-llama.sh` prints it; `tests/llama_golden.rs` holds it to bounds.

use candle_core::quantized::gguf_file;

use crate::gemma3::{Cache, Chunk, Model};

/// The first of equal maxima, as candle's argmax picks it.
pub fn argmax(l: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in l.iter().enumerate() {
        if v > l[best] {
            best = i;
        }
    }
    best as u32
}

/// One prompt compared.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseComparison {
    pub prompt_tokens: usize,
    /// Their greedy tokens.
    pub tokens: usize,
    /// Leading tokens of our own greedy answer equal to theirs.
    pub free_run_equal: usize,
    /// Positions, with their tokens fed, where our argmax is their token.
    pub forced_equal: usize,
    /// Where it is not: our best logit minus our logit for their token.
    pub gaps: Vec<f32>,
}

/// Every prompt compared, and the totals.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub cases: Vec<CaseComparison>,
}

impl Comparison {
    pub fn tokens(&self) -> usize {
        self.cases.iter().map(|c| c.tokens).sum()
    }
    pub fn forced_equal(&self) -> usize {
        self.cases.iter().map(|c| c.forced_equal).sum()
    }
    pub fn free_run_equal(&self) -> usize {
        self.cases.iter().map(|c| c.free_run_equal).sum()
    }
    pub fn largest_gap(&self) -> f32 {
        self.cases.iter().flat_map(|c| c.gaps.iter().copied()).fold(0f32, f32::max)
    }

    /// One line per case and a total, as `scripts/greedy-vs-llama.sh` prints them.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (i, c) in self.cases.iter().enumerate() {
            let gaps = if c.gaps.is_empty() {
                String::new()
            } else {
                let g: Vec<String> = c.gaps.iter().map(|g| format!("{g:.3}")).collect();
                format!("; logit gaps where not: {}", g.join(", "))
            };
            out += &format!(
                "case {i}: {} prompt tokens; free run equal for {}/{} tokens; teacher-forced {}/{} equal{gaps}\n",
                c.prompt_tokens, c.free_run_equal, c.tokens, c.forced_equal, c.tokens
            );
        }
        out += &format!(
            "total: free run equal for {}/{} tokens; teacher-forced {}/{} ({:.1}%) equal; largest logit gap where not: {:.3}\n",
            self.free_run_equal(),
            self.tokens(),
            self.forced_equal(),
            self.tokens(),
            100.0 * self.forced_equal() as f64 / self.tokens().max(1) as f64,
            self.largest_gap()
        );
        out
    }
}

/// Compares the Gemma 3 GGUF at `gguf` with `cases`: (prompt ids, their greedy ids).
pub fn compare(gguf: &std::path::Path, cases: &[(Vec<u32>, Vec<u32>)]) -> candle_core::Result<Comparison> {
    let mut reader = std::io::BufReader::new(std::fs::File::open(gguf)?);
    let content = gguf_file::Content::read(&mut reader)?;
    let model = Model::from_gguf(content, &mut reader)?;
    let run = |cache: &mut Cache, tokens: &[u32]| -> candle_core::Result<Vec<f32>> {
        let mut chunks = [Chunk { cache, tokens, logits: true }];
        Ok(model.forward(&mut chunks)?.remove(0))
    };
    let mut out = Vec::new();
    for (prompt, theirs) in cases {
        // Our own greedy answer, as long as theirs.
        let mut cache = Cache::default();
        let mut logits = run(&mut cache, prompt)?;
        let mut ours = Vec::new();
        while ours.len() < theirs.len() {
            let next = argmax(&logits);
            ours.push(next);
            logits = run(&mut cache, &[next])?;
        }
        let free_run_equal = ours.iter().zip(theirs).take_while(|(a, b)| a == b).count();
        // Teacher forcing: their tokens fed, our choice at each position.
        let mut cache = Cache::default();
        let mut logits = run(&mut cache, prompt)?;
        let (mut forced_equal, mut gaps) = (0, Vec::new());
        for &t in theirs {
            let best = argmax(&logits);
            if best == t {
                forced_equal += 1;
            } else {
                gaps.push(logits[best as usize] - logits[t as usize]);
            }
            logits = run(&mut cache, &[t])?;
        }
        out.push(CaseComparison {
            prompt_tokens: prompt.len(),
            tokens: theirs.len(),
            free_run_equal,
            forced_equal,
            gaps,
        });
    }
    Ok(Comparison { cases: out })
}
