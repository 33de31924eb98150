//! JSON read where it lies and written as it goes: the conversion's reading borrows from the text it
//! was given (a field it does not change is copied as text, never decoded into values), and its
//! writing appends to one buffer. A value a conversion never looks into costs no memory but its text.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// A string as it lies in the text: borrowed, unless it holds escapes.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Strings<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Strings<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Strings(std::marker::PhantomData))
    }
}

pub(super) fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

pub(super) fn is_array(raw: &RawValue) -> bool {
    raw.get().starts_with('[')
}

/// The string `raw` is, if it is one.
pub(super) fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    if !raw.get().starts_with('"') {
        return None;
    }
    serde_json::from_str::<Text<'_>>(raw.get()).ok().map(|text| text.0)
}

/// Whether `raw` is JSON's `true`.
pub(super) fn is_true(raw: &RawValue) -> bool {
    raw.get() == "true"
}

/// Calls `visit` with each field of the object `raw`, in order (an error stops it); anything but an
/// object has no fields.
pub(super) fn for_each_field<'a, E>(
    raw: &'a RawValue,
    mut visit: impl FnMut(Cow<'a, str>, &'a RawValue) -> Result<(), E>,
) -> Result<(), E> {
    struct Fields<'v, F, E>(&'v mut F, &'v mut Option<E>);
    impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue) -> Result<(), E>, E> Visitor<'de> for Fields<'_, F, E> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(Text(key)) = map.next_key()? {
                let value: &'de RawValue = map.next_value()?;
                if let Err(error) = (self.0)(key, value) {
                    *self.1 = Some(error);
                    return Err(de::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
    if !is_object(raw) {
        return Ok(());
    }
    let mut failed = None;
    // The text is a JSON object (a `RawValue` is checked when it is read): only `visit` can fail it.
    let _ = serde_json::Deserializer::from_str(raw.get()).deserialize_map(Fields(&mut visit, &mut failed));
    failed.map_or(Ok(()), Err)
}

/// Calls `visit` with each item of the array `raw`, in order (an error stops it); anything but an
/// array has no items.
pub(super) fn for_each_item<'a, E>(
    raw: &'a RawValue,
    mut visit: impl FnMut(&'a RawValue) -> Result<(), E>,
) -> Result<(), E> {
    struct Items<'v, F, E>(&'v mut F, &'v mut Option<E>);
    impl<'de, F: FnMut(&'de RawValue) -> Result<(), E>, E> Visitor<'de> for Items<'_, F, E> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
            while let Some(item) = items.next_element::<&'de RawValue>()? {
                if let Err(error) = (self.0)(item) {
                    *self.1 = Some(error);
                    return Err(de::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
    if !is_array(raw) {
        return Ok(());
    }
    let mut failed = None;
    let _ = serde_json::Deserializer::from_str(raw.get()).deserialize_seq(Items(&mut visit, &mut failed));
    failed.map_or(Ok(()), Err)
}

/// The value of the field `name` of the object `raw` (the last, as JSON readers take a repeated
/// key), with its position among the fields.
pub(super) fn field<'a>(raw: &'a RawValue, name: &str) -> Option<(usize, &'a RawValue)> {
    let (mut index, mut found) = (0, None);
    let _ = for_each_field::<()>(raw, |key, value| {
        if key == name {
            found = Some((index, value));
        }
        index += 1;
        Ok(())
    });
    found
}

/// How many fields the object `raw` has that `counted` accepts.
pub(super) fn count_fields(raw: &RawValue, counted: impl Fn(&str) -> bool) -> usize {
    let mut count = 0;
    let _ = for_each_field::<()>(raw, |key, _| {
        count += usize::from(counted(&key));
        Ok(())
    });
    count
}

/// `text` as a JSON string.
pub(super) fn write_string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(out, text).expect("writing into memory cannot fail");
}

/// An object being written: `{`, then fields, then [`close`](Self::close).
pub(super) struct ObjectOut<'o> {
    out: &'o mut Vec<u8>,
    empty: bool,
}

impl<'o> ObjectOut<'o> {
    pub(super) fn open(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        ObjectOut { out, empty: true }
    }

    /// Starts the field `key`: its value is written next, into [`value`](Self::value).
    pub(super) fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_string(self.out, key);
        self.out.push(b':');
        self.out
    }

    /// The field `key` with the value `raw`, as it was.
    pub(super) fn raw(&mut self, key: &str, raw: &RawValue) {
        self.key(key).extend_from_slice(raw.get().as_bytes());
    }

    /// The field `key` with the string `text`.
    pub(super) fn string(&mut self, key: &str, text: &str) {
        write_string(self.key(key), text);
    }

    pub(super) fn close(self) {
        self.out.push(b'}');
    }
}

/// An array being written: `[`, then items, then [`close`](Self::close).
pub(super) struct ArrayOut<'o> {
    out: &'o mut Vec<u8>,
    empty: bool,
}

impl<'o> ArrayOut<'o> {
    pub(super) fn open(out: &'o mut Vec<u8>) -> Self {
        out.push(b'[');
        ArrayOut { out, empty: true }
    }

    /// Starts the next item: it is written next, into the buffer returned.
    pub(super) fn item(&mut self) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out
    }

    pub(super) fn close(self) {
        self.out.push(b']');
    }
}

/// Writes the object `raw` with the fields named in `edited` written by `edit` (which may leave
/// one out), the others as they were; a field of `edited` given more than once is edited at its
/// last place, its earlier ones dropped (JSON readers take the last). `append` then adds fields.
pub(super) fn rewrite_object<'a, E>(
    raw: &'a RawValue,
    out: &mut Vec<u8>,
    edited: &[&str],
    mut edit: impl FnMut(&str, &'a RawValue, &mut ObjectOut<'_>) -> Result<(), E>,
    append: impl FnOnce(&mut ObjectOut<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let last: Vec<Option<usize>> = edited.iter().map(|name| field(raw, name).map(|(index, _)| index)).collect();
    let mut object = ObjectOut::open(out);
    let mut index = 0;
    for_each_field(raw, |key, value| {
        let at = index;
        index += 1;
        match edited.iter().position(|name| *name == key) {
            None => object.raw(&key, value),
            Some(which) if last[which] == Some(at) => return edit(&key, value, &mut object),
            Some(_) => {}
        }
        Ok(())
    })?;
    append(&mut object)?;
    object.close();
    Ok(())
}

/// Counts the occurrences of a list's items by an identity (a dogu's name, an entry's key): the
/// kept fields are placed by identity and occurrence. Names are borrowed from the text.
#[derive(Default)]
pub(super) struct Occurrences<'a>(std::collections::BTreeMap<Cow<'a, str>, usize>);

impl<'a> Occurrences<'a> {
    /// Which occurrence of `identity` this is (0 for the first).
    pub(super) fn next(&mut self, identity: Cow<'a, str>) -> usize {
        let seen = self.0.entry(identity).or_default();
        *seen += 1;
        *seen - 1
    }
}

/// The identity of an item (its string field `name`; none or another value: `""`).
pub(super) fn identity<'a>(item: &'a RawValue, name: &str) -> Cow<'a, str> {
    field(item, name).and_then(|(_, value)| string(value)).unwrap_or_default()
}
