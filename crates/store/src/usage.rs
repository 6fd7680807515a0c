//! Tokens of a run's helper calls (judges, the simulated user, the companion in simulated
//! conversations), summed per role, model and purpose.

use rusqlite::params;

use crate::*;

impl Store {
    // ---- helper tokens -----------------------------------------------------------------------

    /// Adds the tokens of some calls to `run_id`'s count for the row's role, model and purpose (the
    /// prices are replaced by the row's). Called as calls return, so a crash loses none recorded.
    pub fn add_usage(&self, run_id: &str, row: &UsageRow) -> StoreResult<()> {
        let u = &row.usage;
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "INSERT INTO call_usage (run_id, role, model, purpose, calls, input_tokens, output_tokens, unknown_usage, \
                 price_input_per_million, price_output_per_million) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
                 ON CONFLICT (run_id, role, model, purpose) DO UPDATE SET calls = calls + excluded.calls, \
                 input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, \
                 unknown_usage = unknown_usage + excluded.unknown_usage, \
                 price_input_per_million = excluded.price_input_per_million, \
                 price_output_per_million = excluded.price_output_per_million",
                params![
                    run_id,
                    row.role.as_str(),
                    row.model,
                    row.purpose.to_text(),
                    n(u.calls),
                    n(u.input_tokens),
                    n(u.output_tokens),
                    n(u.unknown_usage),
                    row.prices.map(|p| p.input_per_million),
                    row.prices.map(|p| p.output_per_million)
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The helper tokens recorded for `run_id`, by role, model and purpose (none for a run stored
    /// before they were recorded).
    pub fn usage(&self, run_id: &str) -> StoreResult<Vec<UsageRow>> {
        if !self.has_table("call_usage")? {
            return Ok(vec![]);
        }
        type Raw = (String, String, String, i64, i64, i64, i64, Option<f64>, Option<f64>);
        let raw: Vec<Raw> = self.all(
            "SELECT role, model, purpose, calls, input_tokens, output_tokens, unknown_usage, price_input_per_million, \
                 price_output_per_million FROM call_usage WHERE run_id = ?1 ORDER BY role, model, purpose",
            [run_id],
            |r| r.try_into(),
        )?;
        let d = self.decoder(run_id);
        raw.into_iter()
            .map(|(role, model, purpose, calls, input, output, unknown, pin, pout)| {
                let id = format!("{model} ({purpose})");
                let prices = match (pin, pout) {
                    (Some(i), Some(o)) => Some(Prices {
                        input_per_million: d.finite(&id, "call_usage.price_input_per_million", i)?,
                        output_per_million: d.finite(&id, "call_usage.price_output_per_million", o)?,
                    }),
                    (None, None) => None,
                    _ => return Err(d.corrupt(Some(&id), "call_usage.price_input_per_million", "one price of two")),
                };
                Ok(UsageRow {
                    role: d.text(&id, "call_usage.role", &role, UsageRole::parse)?,
                    usage: CallUsage {
                        calls: d.count(&id, "call_usage.calls", calls)?,
                        input_tokens: d.count(&id, "call_usage.input_tokens", input)?,
                        output_tokens: d.count(&id, "call_usage.output_tokens", output)?,
                        unknown_usage: d.count(&id, "call_usage.unknown_usage", unknown)?,
                    },
                    purpose: d.text(&id, "call_usage.purpose", &purpose, Purpose::parse)?,
                    model,
                    prices,
                })
            })
            .collect()
    }
}
