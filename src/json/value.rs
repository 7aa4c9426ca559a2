//! The JSON value model: [`Value`], an order-preserving [`Map`] and a [`Number`] kept as its source
//! text (so numbers round-trip exactly and no float formatting is ever needed).

use crate::prelude::*;
use core::fmt;

/// A JSON value. Objects keep their keys in source order; numbers keep their source text.
#[derive(Debug, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

/// A JSON number, as its (valid, RFC 8259) source text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Number(String);

impl Number {
    /// The number's JSON text, e.g. `"42"`, `"-1.5e3"`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A number from text that the parser already validated.
    pub(crate) fn from_valid(text: &str) -> Number {
        Number(text.to_owned())
    }

    /// The value as a `u64`, when the text is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        let mut n: u64 = 0;
        if self.0.is_empty() {
            return None;
        }
        for b in self.0.bytes() {
            if !b.is_ascii_digit() {
                return None;
            }
            // Not `checked_mul`: on wasm32 its overflow check is a 128-bit multiply (`__multi3`).
            if n > u64::MAX / 10 {
                return None;
            }
            n = (n * 10).checked_add(u64::from(b - b'0'))?;
        }
        Some(n)
    }
}

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        let mut s = String::new();
        super::write::write_u64(&mut s, n);
        Number(s)
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON object: its entries in source (or insertion) order.
///
/// A parsed object keeps a repeated key as many times as it appears; [`Map::get`] answers with the
/// last one, like `JSON.parse` and serde_json do.
#[derive(Debug, Default)]
pub struct Map(Vec<(String, Value)>);

/// The entries copied one by one into a list of their number (what the derived `Clone` does,
/// written once for both lists of a value).
impl Clone for Map {
    fn clone(&self) -> Map {
        let mut entries = Vec::with_capacity(self.0.len());
        for (k, v) in &self.0 {
            entries.push((k.clone(), v.clone()));
        }
        Map(entries)
    }
}

impl Clone for Value {
    fn clone(&self) -> Value {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Number(n) => Value::Number(n.clone()),
            Value::String(s) => Value::String(s.clone()),
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(item.clone());
                }
                Value::Array(out)
            }
            Value::Object(map) => Value::Object(map.clone()),
        }
    }
}

impl Map {
    pub fn new() -> Map {
        Map(Vec::new())
    }

    pub(crate) fn from_entries(entries: Vec<(String, Value)>) -> Map {
        Map(entries)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key` (its last occurrence).
    pub fn get(&self, key: &str) -> Option<&Value> {
        #[cfg(test)]
        LOOKED_UP.with(|n| n.set(n.get() + 1));
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0
            .iter_mut()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key`: replaces its value in place if present, else appends it. Returns the old value.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.get_mut(&key) {
            Some(slot) => Some(core::mem::replace(slot, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    /// Adds an entry at the end, for a key known to be absent (no search for it).
    pub(crate) fn append(&mut self, key: String, value: Value) {
        self.0.push((key, value));
    }

    /// Removes every occurrence of `key`; returns the value of the last one.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        // In order, in one pass: the last one taken is the last one.
        let mut out = None;
        let mut i = 0;
        while let Some((k, _)) = self.0.get(i) {
            if k == key {
                out = Some(self.0.remove(i).1);
            } else {
                i += 1;
            }
        }
        out
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a String, &'a Value);
    type IntoIter = core::iter::Map<
        core::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl IntoIterator for Map {
    type Item = (String, Value);
    type IntoIter = alloc::vec::IntoIter<(String, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Map {
        let mut map = Map::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

/// Objects compare as JSON objects: the same keys with equal values, in any order. A repeated key
/// counts by its last value (what [`Map::get`] and `JSON.parse` read), so `{"a":1,"a":2}` equals
/// `{"a":2}`.
impl PartialEq for Map {
    /// The same keys, and for each the same value as `get` reads it (the last of a repeated
    /// key). Each pair of values is compared once: a key's last entries. (Comparing the values
    /// again from `other`'s side doubled the work at every level: equal objects nested 22 deep
    /// took 0.2 s, 40 deep hours.)
    ///
    /// Two copies of one serialization list the same keys in the same order: their entries are
    /// then compared pairwise, in time linear in the keys (a repeated key's last entries are at
    /// the same place in both; an earlier entry of it that differs does not count). Otherwise
    /// (a server that keeps a message in a jsonb column gives its keys back in another order)
    /// `other`'s keys are looked up in a [`Keys`] table of `self`'s: linear too, where looking
    /// each key up in the entries took time quadratic in the keys (1.3 s natively for 20,000
    /// keys in reverse order, 1 ms now).
    fn eq(&self, other: &Map) -> bool {
        let (a, b) = (self.0.as_slice(), other.0.as_slice());
        if a.len() == b.len() && a.iter().zip(b).all(|((k, _), (l, _))| k == l) {
            let (mut x, mut y) = (a, b);
            while let ([(k, v), xs @ ..], [(_, w), ys @ ..]) = (x, y) {
                if v != w && !xs.iter().any(|(l, _)| l == k) {
                    return false;
                }
                (x, y) = (xs, ys);
            }
            return true;
        }
        eq_in_any_order(self, other)
    }
}

/// `a == b` for objects whose keys come in different orders (see [`Map::eq`]): `b`'s entries,
/// last first, each looked up in a table of `a`'s keys; a key's first one read is its last entry,
/// and marks the key seen.
fn eq_in_any_order(a: &Map, b: &Map) -> bool {
    let mut x = Keys::of(a);
    let mut left = x.len;
    for (k, w) in b.0.iter().rev() {
        let at = x.slot(k);
        let Some(n) = x.slots.get_mut(at) else {
            return false;
        };
        if *n & SEEN == 0 {
            match a.0.get((*n as usize).wrapping_sub(1)) {
                Some((_, v)) if v == w => *n |= SEEN,
                _ => return false,
            }
            left -= 1;
        }
    }
    left == 0
}

/// The bit of a [`Keys`] slot that marks its key seen. (Entry numbers stay below it: 2^31 entries
/// take more than 50 GiB.)
const SEEN: u32 = 1 << 31;

/// Each key of a [`Map`] and its last entry (the one [`Map::get`] reads), in a hash table: what
/// comparing two objects whose keys come in different orders, or hashing one, needs without
/// scanning the entries once per key.
pub(crate) struct Keys<'a> {
    entries: &'a [(String, Value)],
    /// Entry numbers + 1 (0: an empty slot), by open addressing; a power of two in size, at most
    /// half full.
    slots: Vec<u32>,
    /// How many keys: the slots filled.
    len: usize,
}

impl<'a> Keys<'a> {
    pub(crate) fn of(map: &'a Map) -> Keys<'a> {
        let mut keys = Keys {
            entries: &map.0,
            slots: vec![0; (map.0.len() * 2).next_power_of_two()],
            len: 0,
        };
        for (n, (k, _)) in map.0.iter().enumerate() {
            let at = keys.slot(k);
            if let Some(slot) = keys.slots.get_mut(at) {
                keys.len += usize::from(*slot == 0);
                // A later entry of the key takes its slot.
                *slot = n as u32 + 1;
            }
        }
        keys
    }

    /// The slot that holds `key`'s entry, or the empty one where it would go.
    #[inline(never)]
    fn slot(&self, key: &str) -> usize {
        let mask = self.slots.len() - 1;
        // The hash's top bits, as many as the table needs: a product's bits depend on the
        // multiplicand's bits below them only, so only the top ones on all of the key. (The bits
        // below them lose the key's last bytes: 20,000 keys `key0`..`key19999` took 32 ms, not 2.)
        let bits = self.slots.len().trailing_zeros();
        let mut at = super::text_hash(key.as_bytes()).wrapping_shr(64 - bits) as usize & mask;
        while let Some(&n) = self.slots.get(at) {
            #[cfg(test)]
            PROBED.with(|n| n.set(n.get() + 1));
            // (0 - 1 wraps to an entry that is never there: an empty slot ends the search.)
            match self.entries.get(((n & !SEEN) as usize).wrapping_sub(1)) {
                Some((k, _)) if k != key => at = (at + 1) & mask,
                _ => break,
            }
        }
        at
    }

    /// Each key with its last entry's value, in no particular order.
    pub(crate) fn last_entries(&self) -> impl Iterator<Item = (&'a String, &'a Value)> + '_ {
        let entries = self.entries;
        self.slots
            .iter()
            .filter_map(move |&n| entries.get((n as usize).wrapping_sub(1)))
            .map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
std::thread_local! {
    /// How many times `Value::eq` ran on this thread (the unit tests count a comparison's work).
    pub(crate) static COMPARED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
    /// How many times `Map::get` ran on this thread.
    pub(crate) static LOOKED_UP: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
    /// How many slots of `Keys` tables were read on this thread.
    pub(crate) static PROBED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        #[cfg(test)]
        COMPARED.with(|n| n.set(n.get() + 1));
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            // A number's text, or a string: the same comparison.
            (Value::Number(Number(a)), Value::Number(Number(b)))
            | (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl Value {
    /// Parses one JSON document (RFC 8259, nesting up to 127 levels); a `parse_error` with line
    /// and column otherwise.
    pub fn parse(text: &str) -> crate::error::Result<Value> {
        super::parse::parse_document(text)
    }

    /// The compact JSON text.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        super::write::write_value(&mut out, self);
        out
    }

    /// The value of `key` when this is an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => map.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_string())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Number(Number::from(n))
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Object(map)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

static NULL: Value = Value::Null;

/// `value["key"]`: the member, or `null` when absent or not an object (as in serde_json).
impl core::ops::Index<&str> for Value {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

/// `value[i]`: the element, or `null` when out of range or not an array (as in serde_json).
impl core::ops::Index<usize> for Value {
    type Output = Value;

    fn index(&self, i: usize) -> &Value {
        match self {
            Value::Array(items) => items.get(i).unwrap_or(&NULL),
            _ => &NULL,
        }
    }
}

/// `map["key"]`: the member, or `null` when absent.
impl core::ops::Index<&str> for Map {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}
