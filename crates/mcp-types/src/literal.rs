//! Number literals as JSON text: what kind each is, whether it is integral, and whether a float
//! read from it keeps its value; shared by [`Integer`](crate::Integer) and the free-form decoders.

/// The two shapes of a JSON number literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Literal {
    /// Digits with an optional minus sign: `-12`.
    Plain,
    /// With a fraction or an exponent: `1.0`, `2e5`.
    Decimal,
}

/// `Some` when `text` is exactly one JSON number.
pub(crate) fn classify(text: &str) -> Option<Literal> {
    let b = text.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let int_len = i - int_start;
    if int_len == 0 || (int_len > 1 && b[int_start] == b'0') {
        return None;
    }
    let mut kind = Literal::Plain;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        kind = Literal::Decimal;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        kind = Literal::Decimal;
    }
    (i == b.len()).then_some(kind)
}

/// The significant digits of a number literal (leading and trailing zeros removed) and the power
/// of ten they are scaled by: `12.50e1` → (`125`, 0).
fn digits_and_scale(text: &str) -> (String, i64) {
    let body = text.trim_start_matches('-');
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (
            &body[..at],
            body[at + 1..].parse::<i64>().unwrap_or(if body[at + 1..].starts_with('-') {
                i64::MIN / 2
            } else {
                i64::MAX / 2
            }),
        ),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    let mut scale = exponent.saturating_sub(frac.len() as i64);
    while digits.ends_with('0') {
        digits.pop();
        scale = scale.saturating_add(1);
    }
    let digits = digits.trim_start_matches('0').to_owned();
    (digits, scale)
}

pub(crate) fn is_zero(text: &str) -> bool {
    digits_and_scale(text).0.is_empty()
}

/// Whether a number literal has no fractional part (`1.0`, `2.5e1`, `-0`).
pub(crate) fn is_integral(text: &str) -> bool {
    let (digits, scale) = digits_and_scale(text);
    digits.is_empty() || scale >= 0
}

/// The value of an integral literal, when it fits an `i128`.
pub(crate) fn integral_value(text: &str) -> Option<i128> {
    let (digits, scale) = digits_and_scale(text);
    if digits.is_empty() {
        return Some(0);
    }
    if scale < 0 || digits.len() as i64 + scale > 38 {
        return None;
    }
    let mut n: i128 = digits.parse().ok()?;
    for _ in 0..scale {
        n = n.checked_mul(10)?;
    }
    Some(if text.starts_with('-') { -n } else { n })
}

/// The number literals of a JSON text, in order, strings skipped.
pub(crate) fn number_literals(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut literals = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // Skip the string, escapes included.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                literals.push(&text[start..i]);
            }
            _ => i += 1,
        }
    }
    literals
}

/// The `Value` of a number serde_json gave as the `f64` `v`, decided by its `literal`: an integer
/// literal stays an integer (`-0` is 0; one beyond 64 bits, which `Value` would hold as a float,
/// is refused naming it), and a float literal is kept when the nearest `f64` has the same
/// decimal value (`1e+21`, `-0.0`, `1.5e+300`: what JavaScript and Python write), or refused.
/// A fraction within ±2^63 is kept as the nearest `f64`, as `Value` keeps it.
pub(crate) fn exact_free_form_number(literal: &str, v: f64) -> Result<serde_json::Value, String> {
    let ambiguous = v.abs() >= 9_223_372_036_854_775_808.0 || (v == 0.0 && v.is_sign_negative());
    let float = serde_json::Number::from_f64(v).map(serde_json::Value::Number);
    match classify(literal) {
        Some(Literal::Plain) if is_zero(literal) => Ok(serde_json::Value::from(0)),
        Some(Literal::Plain) => Err(format!(
            "the integer {literal} cannot be kept exactly in a free-form member (serde_json's `Value` holds \
             integers within 64 bits)"
        )),
        Some(Literal::Decimal) if !ambiguous || same_decimal(literal, v) => {
            float.ok_or_else(|| format!("the number {literal} is beyond the range of an f64"))
        }
        _ => {
            Err(format!("the number {literal} cannot be kept exactly in a free-form member (the nearest f64 is {v:e})"))
        }
    }
}

/// Whether a float literal and an `f64` have the same decimal value (the `f64`'s shortest form).
fn same_decimal(literal: &str, v: f64) -> bool {
    literal.starts_with('-') == v.is_sign_negative() && digits_and_scale(literal) == digits_and_scale(&format!("{v:e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_classified_like_json() {
        for (text, kind) in
            [("0", Some(Literal::Plain)), ("-12", Some(Literal::Plain)), ("1.0", Some(Literal::Decimal))]
        {
            assert_eq!(classify(text), kind, "{text}");
        }
        for text in ["", "-", "01", "1.", ".5", "1e", "+1", "1 ", "\"1\""] {
            assert_eq!(classify(text), None, "{text}");
        }
        for (text, integral) in [
            ("1.0", true),
            ("1.5", false),
            ("15e-1", false),
            ("1.5e1", true),
            ("-0.0", true),
            ("0e-7", true),
            ("1e-999999999999999999999", false),
        ] {
            assert_eq!(is_integral(text), integral, "{text}");
        }
        assert_eq!(integral_value("12.50e1"), Some(125));
        assert_eq!(integral_value("-1e3"), Some(-1000));
        assert_eq!(integral_value("1e40"), None);
    }

    #[test]
    fn free_form_numbers_are_decided_by_their_literal() {
        assert_eq!(number_literals(r#"{"a":[1,-2.5e3,"1\"2",3E+2],"b":-0}"#), ["1", "-2.5e3", "3E+2", "-0"]);
        let kept = |literal: &str| exact_free_form_number(literal, literal.parse().unwrap());
        for (literal, written) in [
            // serde_json writes floats as JavaScript does.
            ("1e+21", "1e+21"),
            ("6.02214076e+23", "6.02214076e+23"),
            ("1.5e+300", "1.5e+300"),
            ("1.7976931348623157e+308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("-0.0", "-0.0"),
            ("-1e30", "-1e+30"),
            ("0.30000000000000000001", "0.3"),
        ] {
            assert_eq!(kept(literal).unwrap().to_string(), written, "{literal}");
        }
        assert_eq!(kept("-0").unwrap(), serde_json::json!(0));
        let refused = kept("18446744073709551616").unwrap_err();
        assert!(refused.contains("the integer 18446744073709551616 cannot be kept exactly"), "{refused}");
        let refused = kept("1.00000000000000000001e30").unwrap_err();
        assert!(refused.contains("1.00000000000000000001e30"), "{refused}");
    }
}
