//! Masking personal data in text: phone numbers, e-mail addresses, Chinese resident identity
//! numbers and bank card numbers. Used by `--redact` on stored transcripts, exports and reports.
//!
//! What is masked (each replaced by a marker: `[PHONE]`, `[EMAIL]`, `[ID]`, `[CARD]`):
//!
//! - **Phone numbers**: Chinese mobiles `1[3-9]` + 9 digits, written whole or as 3-4-4 / 3-8 with
//!   spaces or hyphens; landlines with an area code (`010`, `02x`, `0xxx`) followed by a 7- or
//!   8-digit number, the area code set off by `-`, a space or brackets (`(010)`, `（0571）`), or
//!   written whole; either kind with a country prefix `+86`, `(+86)`, `（+86）` or `0086` (the area
//!   code's leading 0 may then be dropped, as in `+86 10 8888 6666`).
//! - **E-mail addresses**: `local@domain.tld` with an ASCII local part and a dotted domain whose last
//!   label has two or more letters.
//! - **Resident identity numbers** (18 characters): 17 digits and a check character (digit or `X`),
//!   with a valid birth date (1900–2099) at characters 7–14 and a valid ISO 7064 MOD 11-2 check.
//! - **Bank card numbers**: 13–19 digits, whole or grouped with spaces or hyphens, passing the Luhn
//!   check and starting like a payment card (3, 4, 5 or 6, or 2221–2720 for 16 digits).
//!
//! A number counts only as a whole: digits or ASCII letters right before or after it mean it is
//! part of something longer and it is left alone. Times (`08:30`), dates (`2024-05-01`), amounts and
//! short numbers are never masked. Fifteen-digit first-generation identity numbers, full-width digits
//! and numbers spelled out in words are not recognised.

use std::collections::BTreeMap;
use std::fmt;

/// The kind of a personal datum found in text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Phone,
    Email,
    IdNumber,
    CardNumber,
}

impl Kind {
    /// The marker that replaces a datum of this kind.
    pub fn marker(self) -> &'static str {
        match self {
            Kind::Phone => "[PHONE]",
            Kind::Email => "[EMAIL]",
            Kind::IdNumber => "[ID]",
            Kind::CardNumber => "[CARD]",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Phone => "phone",
            Kind::Email => "email",
            Kind::IdNumber => "id_number",
            Kind::CardNumber => "card_number",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One datum found: its kind and its byte range in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// The text with every datum replaced by its kind's marker.
pub fn redact(text: &str) -> String {
    redact_counted(text).0
}

/// The redacted text and how many data of each kind were masked.
pub fn redact_counted(text: &str) -> (String, BTreeMap<Kind, usize>) {
    let found = find(text);
    let mut counts = BTreeMap::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        out.push_str(f.kind.marker());
        *counts.entry(f.kind).or_default() += 1;
        at = f.end;
    }
    out.push_str(&text[at..]);
    (out, counts)
}

/// Every datum in `text`, in order, without overlaps.
pub fn find(text: &str) -> Vec<Found> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |c| c.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let hit = email_at(&chars, i).map(|end| (end, Kind::Email)).or_else(|| number_at(&chars, i));
        match hit {
            Some((end, kind)) => {
                out.push(Found { kind, start: byte_at(i), end: byte_at(end) });
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

fn ch(chars: &[(usize, char)], i: usize) -> Option<char> {
    chars.get(i).map(|c| c.1)
}

fn is_local_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._%+-".contains(c)
}

/// An e-mail address starting at `i` (which must begin its local part): the end index.
fn email_at(chars: &[(usize, char)], i: usize) -> Option<usize> {
    let c = ch(chars, i)?;
    if !c.is_ascii_alphanumeric() || i > 0 && ch(chars, i - 1).is_some_and(is_local_char) {
        return None;
    }
    let mut j = i;
    while ch(chars, j).is_some_and(is_local_char) {
        j += 1;
    }
    if ch(chars, j) != Some('@') || ch(chars, j - 1) == Some('.') {
        return None;
    }
    let domain_start = j + 1;
    let mut k = domain_start;
    while ch(chars, k).is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') {
        k += 1;
    }
    // Drop a trailing full stop (end of sentence) and anything after the last label.
    while k > domain_start && matches!(ch(chars, k - 1), Some('.') | Some('-')) {
        k -= 1;
    }
    let domain: String = chars[domain_start..k].iter().map(|c| c.1).collect();
    let labels: Vec<&str> = domain.split('.').collect();
    let tld = labels.last()?;
    let ok = labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && !l.starts_with('-') && !l.ends_with('-'))
        && tld.len() >= 2
        && tld.chars().all(|c| c.is_ascii_alphabetic());
    ok.then_some(k)
}

/// A run of digit groups from `i`: each group's (start, end) char indices, groups separated by
/// exactly one space or hyphen.
fn digit_groups(chars: &[(usize, char)], i: usize) -> Vec<(usize, usize)> {
    let mut groups = Vec::new();
    let mut j = i;
    loop {
        let start = j;
        while ch(chars, j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
        if j == start {
            break;
        }
        groups.push((start, j));
        if matches!(ch(chars, j), Some(' ') | Some('-')) && ch(chars, j + 1).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        } else {
            break;
        }
    }
    groups
}

fn digits_of(chars: &[(usize, char)], groups: &[(usize, usize)]) -> String {
    groups.iter().flat_map(|&(s, e)| chars[s..e].iter().map(|c| c.1)).collect()
}

fn lens(groups: &[(usize, usize)]) -> Vec<usize> {
    groups.iter().map(|(s, e)| e - s).collect()
}

/// Whether the character at `i` ends a number (nothing that would make it part of a longer token).
fn ends_token(chars: &[(usize, char)], i: usize) -> bool {
    !ch(chars, i).is_some_and(|c| c.is_ascii_alphanumeric())
}

/// A number datum starting at `i`: the end index and the kind.
fn number_at(chars: &[(usize, char)], i: usize) -> Option<(usize, Kind)> {
    if i > 0 && ch(chars, i - 1).is_some_and(|c| c.is_ascii_alphanumeric() || c == '+') {
        return None;
    }
    // A country prefix: +86, (+86), （+86）, 0086, each optionally followed by a space or hyphen.
    if let Some(after) = country_prefix(chars, i) {
        let after = if matches!(ch(chars, after), Some(' ') | Some('-')) { after + 1 } else { after };
        return phone_after_prefix(chars, after).map(|end| (end, Kind::Phone));
    }
    // An area code in brackets: (010) 8888 6666, （0571）88886666.
    if matches!(ch(chars, i), Some('(') | Some('（')) {
        let groups = digit_groups(chars, i + 1);
        let &(s, e) = groups.first()?;
        if groups.len() != 1 || !is_area_code(&digits_of(chars, &groups[..1]), true) || e == s {
            return None;
        }
        if !matches!(ch(chars, e), Some(')') | Some('）')) {
            return None;
        }
        let mut j = e + 1;
        if matches!(ch(chars, j), Some(' ') | Some('-')) {
            j += 1;
        }
        return local_number(chars, j).map(|end| (end, Kind::Phone));
    }
    if !ch(chars, i).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    let groups = digit_groups(chars, i);
    // The longest prefix of whole groups that is a datum.
    for k in (1..=groups.len()).rev() {
        let prefix = &groups[..k];
        let end = prefix[k - 1].1;
        let digits = digits_of(chars, prefix);
        let shape = lens(prefix);
        // An identity number ending in X.
        if digits.len() == 17 && matches!(ch(chars, end), Some('X') | Some('x')) && ends_token(chars, end + 1) {
            let id = format!("{digits}X");
            if is_resident_id(&id) {
                return Some((end + 1, Kind::IdNumber));
            }
        }
        if !ends_token(chars, end) {
            continue;
        }
        if digits.len() == 18 && is_resident_id(&digits) {
            return Some((end, Kind::IdNumber));
        }
        if is_mobile(&digits, &shape) || is_landline(&digits, &shape) {
            return Some((end, Kind::Phone));
        }
        if is_card(&digits, &shape) {
            return Some((end, Kind::CardNumber));
        }
    }
    None
}

/// The end of a country prefix at `i`, if there is one.
fn country_prefix(chars: &[(usize, char)], i: usize) -> Option<usize> {
    let text: String = chars[i..chars.len().min(i + 5)].iter().map(|c| c.1).collect();
    for (p, len) in [("(+86)", 5), ("（+86）", 5), ("+86", 3), ("0086", 4)] {
        if text.starts_with(p) {
            // `0086` and `+86` must not run straight into more digits of the same group
            // unless a mobile follows (`+8613812345678`).
            return Some(i + len);
        }
    }
    None
}

/// A mobile or a landline after a country prefix (area code with or without its leading 0).
fn phone_after_prefix(chars: &[(usize, char)], i: usize) -> Option<usize> {
    if matches!(ch(chars, i), Some('(') | Some('（')) {
        return number_at(chars, i).filter(|(_, k)| *k == Kind::Phone).map(|(end, _)| end);
    }
    let groups = digit_groups(chars, i);
    for k in (1..=groups.len()).rev() {
        let prefix = &groups[..k];
        let end = prefix[k - 1].1;
        if !ends_token(chars, end) {
            continue;
        }
        let digits = digits_of(chars, prefix);
        let shape = lens(prefix);
        if is_mobile(&digits, &shape)
            || is_landline(&digits, &shape)
            || is_landline(&format!("0{digits}"), &{
                let mut s = shape.clone();
                s[0] += 1;
                s
            })
        {
            return Some(end);
        }
    }
    None
}

/// A local landline number (7 or 8 digits, possibly split 3-4 or 4-4) at `i`.
fn local_number(chars: &[(usize, char)], i: usize) -> Option<usize> {
    let groups = digit_groups(chars, i);
    for k in (1..=groups.len().min(2)).rev() {
        let prefix = &groups[..k];
        let end = prefix[k - 1].1;
        let digits = digits_of(chars, prefix);
        let shape = lens(prefix);
        let split_ok = matches!(shape.as_slice(), [7] | [8] | [3, 4] | [4, 4]);
        if split_ok && (7..=8).contains(&digits.len()) && !digits.starts_with('0') && ends_token(chars, end) {
            return Some(end);
        }
    }
    None
}

/// `010`, `020`–`029` (three digits) or `0xxx` with x from 3–9 first (four digits).
fn is_area_code(d: &str, with_zero: bool) -> bool {
    let d = if with_zero {
        match d.strip_prefix('0') {
            Some(rest) => rest,
            None => return false,
        }
    } else {
        d
    };
    let b = d.as_bytes();
    match b.len() {
        2 => (b[0] == b'1' && b[1] == b'0') || b[0] == b'2',
        3 => (b'3'..=b'9').contains(&b[0]),
        _ => false,
    }
}

fn is_mobile(digits: &str, shape: &[usize]) -> bool {
    let b = digits.as_bytes();
    b.len() == 11 && b[0] == b'1' && (b'3'..=b'9').contains(&b[1]) && matches!(shape, [11] | [3, 4, 4] | [3, 8])
}

fn is_landline(digits: &str, shape: &[usize]) -> bool {
    if !digits.starts_with('0') {
        return false;
    }
    // Split the area code off where the writer did, or (written whole) by the numbering plan.
    let area_len = match shape {
        [_] => {
            if digits.starts_with("010") || digits.starts_with("02") {
                3
            } else {
                4
            }
        }
        [a, ..] => *a,
        [] => return false,
    };
    if area_len > digits.len() || !is_area_code(&digits[..area_len], true) {
        return false;
    }
    let local = &digits[area_len..];
    let local_shape = &shape[1.min(shape.len())..];
    let local_ok = matches!(local_shape, [] | [7] | [8] | [3, 4] | [4, 4]);
    local_ok && (7..=8).contains(&local.len()) && !local.starts_with('0')
}

fn is_card(digits: &str, shape: &[usize]) -> bool {
    let n = digits.len();
    if !(13..=19).contains(&n) || !shape.iter().all(|&g| g >= 3) {
        return false;
    }
    let first = digits.as_bytes()[0];
    let issuer = match first {
        b'3'..=b'6' => true,
        b'2' => n == 16 && (2221..=2720).contains(&digits[..4].parse::<u32>().unwrap_or(0)),
        _ => false,
    };
    issuer && luhn(digits)
}

/// The Luhn check over ASCII digits.
pub fn luhn(digits: &str) -> bool {
    let mut sum = 0u32;
    for (i, b) in digits.bytes().rev().enumerate() {
        let mut d = u32::from(b - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum.is_multiple_of(10)
}

/// An 18-character resident identity number: region, valid birth date, MOD 11-2 check character.
pub fn is_resident_id(id: &str) -> bool {
    let b = id.as_bytes();
    if b.len() != 18 || !b[..17].iter().all(u8::is_ascii_digit) || !(b[17].is_ascii_digit() || b[17] == b'X') {
        return false;
    }
    if b[0] == b'0' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| id[r].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (num(6..10), num(10..12), num(12..14));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if !(1900..=2099).contains(&year) || day == 0 || day > days {
        return false;
    }
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const CHECK: &[u8; 11] = b"10X98765432";
    let sum: u32 = b[..17].iter().zip(WEIGHTS).map(|(d, w)| u32::from(d - b'0') * w).sum();
    CHECK[(sum % 11) as usize] == b[17]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid identity number for a region and birth date, with its check character computed.
    fn id_for(prefix17: &str) -> String {
        const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
        let sum: u32 = prefix17.bytes().zip(WEIGHTS).map(|(d, w)| u32::from(d - b'0') * w).sum();
        format!("{prefix17}{}", b"10X98765432"[(sum % 11) as usize] as char)
    }

    /// A Luhn-valid card number from its first digits (the last digit computed).
    fn card_for(prefix: &str) -> String {
        (0..10).map(|d| format!("{prefix}{d}")).find(|c| luhn(c)).unwrap()
    }

    fn kinds(text: &str) -> Vec<Kind> {
        find(text).into_iter().map(|f| f.kind).collect()
    }

    #[test]
    fn the_check_helpers_agree_with_known_numbers() {
        // The example number of GB 11643-1999.
        assert!(is_resident_id("11010519491231002X"));
        assert!(!is_resident_id("110105194912310021"));
        assert!(!is_resident_id("11010519491331002X")); // month 13
        assert!(luhn("4111111111111111"));
        assert!(luhn("6222021234567890128") == (card_for("622202123456789012") == "6222021234567890128"));
        assert!(!luhn("4111111111111112"));
        assert_eq!(id_for("11010519491231002"), "11010519491231002X");
    }

    #[test]
    fn chinese_mobiles_in_every_common_form_are_masked() {
        let cases = [
            ("我的手机是13812345678，有空打给我", "我的手机是[PHONE]，有空打给我"),
            ("电话：138 1234 5678。", "电话：[PHONE]。"),
            ("打这个138-1234-5678吧", "打这个[PHONE]吧"),
            ("+86 13912345678", "[PHONE]"),
            ("+8613912345678就是我", "[PHONE]就是我"),
            ("（+86）199-8765-4321", "[PHONE]"),
            ("(+86) 15011112222", "[PHONE]"),
            ("008618612345678", "[PHONE]"),
            ("+86-176 0000 1111", "[PHONE]"),
            ("call me at 13512345678 tonight", "call me at [PHONE] tonight"),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text), want, "{text}");
        }
    }

    #[test]
    fn landlines_with_area_codes_are_masked() {
        let cases = [
            ("办公室010-88886666转", "办公室[PHONE]转"),
            ("座机 0571-8888666。", "座机 [PHONE]。"),
            ("(010)12345678", "[PHONE]"),
            ("（0755）2345-6789有人接", "[PHONE]有人接"),
            ("家里电话 021 6123 4567", "家里电话 [PHONE]"),
            ("02161234567", "[PHONE]"),
            ("+86 10 8888 6666", "[PHONE]"),
            ("+86-21-61234567", "[PHONE]"),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text), want, "{text}");
        }
    }

    #[test]
    fn email_addresses_are_masked_in_chinese_and_english_text() {
        let cases = [
            ("邮箱是zhang.san@example.com，记得发给我", "邮箱是[EMAIL]，记得发给我"),
            ("Write to li_si+work@mail.example.co.uk.", "Write to [EMAIL]."),
            ("我的QQ邮箱123456@qq.com", "我的QQ邮箱[EMAIL]"),
            ("a@b.cn和c@d.org", "[EMAIL]和[EMAIL]"),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text), want, "{text}");
        }
        for text in ["我在@小满 的群里", "user@localhost", "name@", "@example.com", "a@b.c1"] {
            assert_eq!(redact(text), text, "{text}");
        }
    }

    #[test]
    fn resident_identity_numbers_are_masked_with_x_or_digit() {
        let with_x = "11010519491231002X";
        let digit = id_for("44030619900307123");
        for (text, want) in [
            (format!("身份证号{with_x}，别外传"), "身份证号[ID]，别外传".to_string()),
            (format!("身份证号码：{}", with_x.to_lowercase()), "身份证号码：[ID]".to_string()),
            (format!("ID {digit}."), "ID [ID].".to_string()),
        ] {
            assert_eq!(redact(&text), want, "{text}");
        }
        // An 18-digit number with a wrong check digit or an impossible date is not an identity
        // number (and, not passing Luhn either, stays).
        let wrong: Vec<String> = (b'0'..=b'9')
            .map(|d| format!("{}{}", &digit[..17], d as char))
            .filter(|n| *n != digit && !luhn(n))
            .collect();
        assert!(wrong.len() >= 7);
        for n in &wrong {
            assert!(!is_resident_id(n));
            assert_eq!(redact(n), *n);
        }
        assert_eq!(kinds("110105194902301234"), Vec::<Kind>::new()); // 30 February
    }

    #[test]
    fn card_numbers_pass_luhn_and_may_be_grouped() {
        let unionpay = card_for("622202123456789012"); // 19 digits
        let visa = "4111111111111111";
        let grouped = format!("{} {} {} {}", &visa[..4], &visa[4..8], &visa[8..12], &visa[12..]);
        let hyphens = format!(
            "{}-{}-{}-{}-{}",
            &unionpay[..4],
            &unionpay[4..8],
            &unionpay[8..12],
            &unionpay[12..16],
            &unionpay[16..]
        );
        for text in
            [format!("卡号{unionpay}，工商银行"), format!("card {visa}"), format!("尾号是{grouped}的卡"), hyphens]
        {
            assert_eq!(kinds(&text), vec![Kind::CardNumber], "{text}");
            assert!(redact(&text).contains("[CARD]"), "{text}");
        }
        // One digit off fails Luhn: left alone.
        let off = format!("{}{}", &visa[..15], 2);
        assert_eq!(redact(&off), off);
    }

    #[test]
    fn times_dates_amounts_and_short_numbers_are_left_alone() {
        for text in [
            "我们08:30见，09:00开会",
            "2024-05-01是劳动节",
            "2024年5月1日 14:30",
            "今天走了12345步，花了399元",
            "房间号1203，楼层12",
            "订单时间 2024-05-01 08:30:15",
            "版本 v2.0.1，编号 A12345678901",
            "1,380,012,345",
            "价格 13800.50 元",
            "20240501083015", // a timestamp (starts with 2, not a card range)
            "第1381234567号", // ten digits
            "138123456789",   // twelve digits: not a mobile
            "x13812345678",   // part of a longer token
            "13812345678x",
            "3.1415926535897932",
            "电话号码是保密的",
        ] {
            assert_eq!(find(text), vec![], "{text}");
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn several_kinds_in_one_conversation_are_all_masked_and_counted() {
        let id = id_for("51010719850612003");
        let card = card_for("621700123456789012");
        let text = format!(
            "（轻声）我记下了：手机13812345678，邮箱xiaoman@example.org，身份证{id}，卡号{card}。明天08:30，2024-05-01见。"
        );
        let (out, counts) = redact_counted(&text);
        assert_eq!(
            out,
            "（轻声）我记下了：手机[PHONE]，邮箱[EMAIL]，身份证[ID]，卡号[CARD]。明天08:30，2024-05-01见。"
        );
        assert_eq!(counts.values().sum::<usize>(), 4);
        assert_eq!(counts[&Kind::Phone], 1);
        // Redacting twice changes nothing more.
        assert_eq!(redact(&out), out);
    }

    #[test]
    fn random_text_never_panics_and_redaction_is_stable() {
        let pool: Vec<char> = "0123456789013813X x-+()（）@._:，。电话邮箱abcQ".chars().collect();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut cases = 0;
        for _ in 0..20_000 {
            let len = rng.usize(0..40);
            let text: String = (0..len).map(|_| pool[rng.usize(..pool.len())]).collect();
            let found = find(&text);
            for pair in found.windows(2) {
                assert!(pair[0].end <= pair[1].start, "{text:?}");
            }
            for f in &found {
                assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end) && f.start < f.end);
            }
            let once = redact(&text);
            assert_eq!(redact(&once), once, "{text:?}");
            cases += 1;
        }
        eprintln!("redact: {cases} random texts, no panic, redaction stable");
    }

    #[test]
    fn byte_ranges_point_at_the_data() {
        let text = "电话13812345678和邮箱a@b.cn";
        let found = find(text);
        assert_eq!(found.len(), 2);
        assert_eq!(&text[found[0].start..found[0].end], "13812345678");
        assert_eq!(&text[found[1].start..found[1].end], "a@b.cn");
    }
}
