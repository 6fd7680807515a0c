//! The eleven H2HTalk sub-tasks and their families.

use std::fmt;
use std::str::FromStr;

/// The three families the sub-tasks fall into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Dialogue,
    Recollection,
    Itinerary,
}

impl Family {
    pub const ALL: [Family; 3] = [Family::Dialogue, Family::Recollection, Family::Itinerary];

    pub fn name(self) -> &'static str {
        match self {
            Family::Dialogue => "dialogue",
            Family::Recollection => "recollection",
            Family::Itinerary => "itinerary",
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The family whose rubric judges the items of a group: a sub-task stem, or [`SAFETY_GROUP`]
    /// (judged as dialogue).
    pub fn of_group(group: &str) -> Option<Family> {
        if group == SAFETY_GROUP { Some(Family::Dialogue) } else { Task::from_stem(group).map(Task::family) }
    }
}

/// The group of a run's items that are not a sub-task's: the SAP safety set.
pub const SAFETY_GROUP: &str = "sap_safety";

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One H2HTalk sub-task. The order of [`Task::ALL`] is the order of every report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    DialogueBase,
    DialogueEmotion,
    DialogueSchedule,
    RecollectionSynthesize,
    RecollectionRefine,
    RecollectionInitialize,
    ItineraryBasic,
    ItineraryMiddle,
    ItineraryAdvanced,
    ItineraryFeedback,
    ItineraryInitialize,
}

impl Task {
    pub const ALL: [Task; 11] = [
        Task::DialogueBase,
        Task::DialogueEmotion,
        Task::DialogueSchedule,
        Task::RecollectionSynthesize,
        Task::RecollectionRefine,
        Task::RecollectionInitialize,
        Task::ItineraryBasic,
        Task::ItineraryMiddle,
        Task::ItineraryAdvanced,
        Task::ItineraryFeedback,
        Task::ItineraryInitialize,
    ];

    /// The file stem the official release uses (`dialogue_base`, ...).
    pub fn stem(self) -> &'static str {
        match self {
            Task::DialogueBase => "dialogue_base",
            Task::DialogueEmotion => "dialogue_emotion",
            Task::DialogueSchedule => "dialogue_schedule",
            Task::RecollectionSynthesize => "recollection_synthesize",
            Task::RecollectionRefine => "recollection_refine",
            Task::RecollectionInitialize => "recollection_initialize",
            Task::ItineraryBasic => "itinerary_basic",
            Task::ItineraryMiddle => "itinerary_middle",
            Task::ItineraryAdvanced => "itinerary_advanced",
            Task::ItineraryFeedback => "itinerary_feedback",
            Task::ItineraryInitialize => "itinerary_initialize",
        }
    }

    pub fn family(self) -> Family {
        match self {
            Task::DialogueBase | Task::DialogueEmotion | Task::DialogueSchedule => Family::Dialogue,
            Task::RecollectionSynthesize | Task::RecollectionRefine | Task::RecollectionInitialize => {
                Family::Recollection
            }
            _ => Family::Itinerary,
        }
    }

    /// What the companion must produce, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Task::DialogueBase => "a short in-persona reply to the last user turn",
            Task::DialogueEmotion => "an emotional-support reply to a distressed user",
            Task::DialogueSchedule => "a reply that fits what the companion is doing right now",
            Task::RecollectionSynthesize => "key memories extracted from a conversation, or \"no key information\"",
            Task::RecollectionRefine => "one memory rewritten concisely in the first person",
            Task::RecollectionInitialize => "a proactive greeting that opens from a shared memory",
            Task::ItineraryBasic => "the companion's own day as a short overview",
            Task::ItineraryMiddle => "the overview as a timed plan of HH:MM activities",
            Task::ItineraryAdvanced => "one slot of the plan expanded into a numbered sub-schedule",
            Task::ItineraryFeedback => "one warm sentence answering the user's comment on the current activity",
            Task::ItineraryInitialize => "a proactive message sharing the companion's plans",
        }
    }

    pub fn from_stem(stem: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.stem() == stem)
    }

    /// All stems joined by ", ", for error messages.
    pub fn stem_list() -> String {
        Task::ALL.map(Task::stem).join(", ")
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.stem())
    }
}

impl FromStr for Task {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Task::from_stem(s).ok_or_else(|| format!("unknown sub-task `{s}`; expected one of: {}", Task::stem_list()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_round_trip_and_families_split_three_three_five() {
        for t in Task::ALL {
            assert_eq!(t.stem().parse::<Task>().unwrap(), t);
            assert!(t.stem().starts_with(t.family().name()));
        }
        let count = |f| Task::ALL.iter().filter(|t| t.family() == f).count();
        assert_eq!([count(Family::Dialogue), count(Family::Recollection), count(Family::Itinerary)], [3, 3, 5]);
        assert!("dialogue".parse::<Task>().unwrap_err().contains("dialogue_base"));
    }
}
