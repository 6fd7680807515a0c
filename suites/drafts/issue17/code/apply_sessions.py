p='/work/main/crates/data/src/suite/model.rs'
s=open(p).read()
s=s.replace("""    /// dialogue_base, dialogue_emotion, recollection_synthesize, and the safety set.
    History { history: Vec<Turn> },
    /// dialogue_schedule.
    Schedule { schedule: Vec<Slot>, now: ClockTime, history: Vec<Turn> },""","""    /// dialogue_base, dialogue_emotion, recollection_synthesize, and the safety set. `sessions`:
    /// earlier dated conversations (oldest first; empty when there are none), then `date`, the day
    /// of the current conversation (`Some` exactly when there are sessions).
    History { sessions: Vec<Session>, date: Option<Date>, history: Vec<Turn> },
    /// dialogue_schedule.
    Schedule { schedule: Vec<Slot>, now: ClockTime, sessions: Vec<Session>, date: Option<Date>, history: Vec<Turn> },""")
s=s.replace("""inputs_shape!(HistoryShape { history: Vec<Turn> });
inputs_shape!(ScheduleShape { schedule: Vec<Slot>, now: ClockTime, history: Vec<Turn> });""","""/// Inputs with a chat history may carry earlier sessions and the current date (both or neither).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryShape {
    #[serde(default)]
    sessions: Option<Vec<Session>>,
    #[serde(default)]
    date: Option<Date>,
    history: Vec<Turn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleShape {
    schedule: Vec<Slot>,
    now: ClockTime,
    #[serde(default)]
    sessions: Option<Vec<Session>>,
    #[serde(default)]
    date: Option<Date>,
    history: Vec<Turn>,
}""")
s=s.replace("""                let s: HistoryShape = de(value)?;
                Inputs::History { history: s.history }""","""                let s: HistoryShape = de(value)?;
                Inputs::History { sessions: s.sessions.unwrap_or_default(), date: s.date, history: s.history }""")
s=s.replace("""                let s: ScheduleShape = de(value)?;
                Inputs::Schedule { schedule: s.schedule, now: s.now, history: s.history }""","""                let s: ScheduleShape = de(value)?;
                Inputs::Schedule {
                    schedule: s.schedule,
                    now: s.now,
                    sessions: s.sessions.unwrap_or_default(),
                    date: s.date,
                    history: s.history,
                }""")
s=s.replace("""            Inputs::History { history } | Inputs::Schedule { history, .. } => Some(history),""","""            Inputs::History { history, .. } | Inputs::Schedule { history, .. } => Some(history),""")
# days since epoch for Date (stats)
s=s.replace("""impl Date {
    pub fn parse(s: &str) -> Option<Date> {""","""impl Date {
    /// Days since 1970-01-01 (for gaps between dates).
    pub fn days(self) -> i64 {
        let (y, m, d) = (i64::from(self.year), i64::from(self.month), i64::from(self.day));
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    pub fn parse(s: &str) -> Option<Date> {""")
open(p,'w').write(s)

p='/work/main/crates/data/src/suite/mod.rs'
s=open(p).read()
s=s.replace("""        Inputs::History { history } => check_history(src, "inputs.history", history, replies, problems),
        Inputs::Schedule { schedule, now, history } => {
            check_schedule(src, "inputs.schedule", schedule, problems);
            check_now(src, *now, schedule, problems);
            check_history(src, "inputs.history", history, true, problems);
        }""","""        Inputs::History { sessions, date, history } => {
            check_sessions(s, sessions, *date, problems);
            check_history(src, "inputs.history", history, replies, problems)
        }
        Inputs::Schedule { schedule, now, sessions, date, history } => {
            check_schedule(src, "inputs.schedule", schedule, problems);
            check_now(src, *now, schedule, problems);
            check_sessions(s, sessions, *date, problems);
            check_history(src, "inputs.history", history, true, problems);
        }""")
s=s.replace("""/// Checks across scenarios: unique ids,""","""/// Earlier sessions: dated, oldest first, each before the current `date` (given exactly when there
/// are sessions), each with a history; and `multi_session` set exactly when there are sessions.
fn check_sessions(s: &Scenario, sessions: &[Session], date: Option<Date>, problems: &mut Problems) {
    let src = &s.source;
    match (sessions.is_empty(), date) {
        (true, Some(_)) => problems.at(src, "inputs.date", "is given without `sessions`; give both or neither"),
        (false, None) => problems.at(src, "inputs.date", "is missing: with `sessions`, give the date of the current conversation"),
        _ => {}
    }
    let mut previous: Option<Date> = None;
    for (i, session) in sessions.iter().enumerate() {
        let field = format!("inputs.sessions[{i}]");
        if previous.is_some_and(|p| p >= session.date) {
            problems.at(src, format!("{field}.date"), "sessions must be in date order, each on a later day");
        }
        if date.is_some_and(|d| session.date >= d) {
            problems.at(src, format!("{field}.date"), "must come before the current `date`");
        }
        check_history(src, &format!("{field}.history"), &session.history, false, problems);
        previous = Some(session.date);
    }
    if Suite::is_safety(s) {
        return;
    }
    if s.tags.multi_session != !sessions.is_empty() {
        problems.at(
            src,
            "tags.multi_session",
            if sessions.is_empty() {
                "is true, but the inputs carry no earlier session: add `sessions` with the detail it depends on"
            } else {
                "is false, but the inputs carry earlier sessions: set it true"
            },
        );
    }
}

/// Checks across scenarios: unique ids,""")
open(p,'w').write(s)
