//! v2 → v3: the inline mask as the manifest, and what the annotation kept back in its place.
//!
//! A v2 edit wins over what the annotation kept where v3's rules let only one of them be: an entry
//! given a value, a Secret, or made absent or sensitive by a v2 edit loses its kept `configRef`; a
//! mask given inline loses its kept `crRef` (v3: "manifest and crRef are mutually exclusive"). So the
//! object written is one v3 accepts, whatever the annotation says; a kept value of a type v3 forbids
//! refuses the conversion instead (`kept`).

use serde_json::value::RawValue;

use super::json::{
    ArrayOut, ObjectOut, Occurrences, count_fields, field, for_each_item, identity, is_object, is_true, rewrite_object,
    string,
};
use super::kept::{Created, EntryPlace, Kept};
use super::{ConversionError, V3_FIELDS_ANNOTATION};

/// Writes the v2 Blueprint `object` as v3 (`api_version`) into `out`.
pub(super) fn write(object: &RawValue, api_version: &str, out: &mut Vec<u8>) -> Result<(), ConversionError> {
    let metadata = field(object, "metadata").map(|(_, metadata)| metadata);
    let annotations = metadata.and_then(|m| field(m, "annotations")).map(|(_, a)| a).filter(|a| is_object(a));
    let annotation = annotations.and_then(|a| field(a, V3_FIELDS_ANNOTATION)).map(|(_, value)| value);
    // The annotation's text, unescaped: the kept fields borrow from it.
    let text = match annotation {
        None => None,
        Some(value) => Some(string(value).ok_or_else(|| ConversionError::ForgedV3Fields("it is not a string".into()))?),
    };
    let kept = match &text {
        Some(text) => Kept::read(text)?,
        None => Kept::default(),
    };
    // What to drop of the metadata with the annotation: what the conversion to v2 created for it, if
    // nothing else is in it now.
    let others = annotations.map_or(0, |a| count_fields(a, |key| key != V3_FIELDS_ANNOTATION));
    let nothing_else = annotation.is_some() && others == 0;
    let drop_annotations = nothing_else && kept.created == Created::Annotations;
    let drop_metadata = nothing_else
        && kept.created == Created::Metadata
        && metadata.is_some_and(|m| count_fields(m, |key| key != "annotations") == 0);
    let spec = field(object, "spec").map(|(_, spec)| spec).filter(|spec| is_object(spec));
    rewrite_object(
        object,
        out,
        &["apiVersion", "metadata", "spec"],
        |key, value, root| {
            match key {
                "apiVersion" => root.string(key, api_version),
                "metadata" if drop_metadata => {}
                "metadata" if annotation.is_some() => write_metadata(value, drop_annotations, root.key(key)),
                "spec" if spec.is_some() => write_spec(value, &kept, root.key(key))?,
                _ => root.raw(key, value),
            }
            Ok(())
        },
        |_| Ok(()),
    )
}

/// The metadata without the annotation (and without `annotations` when nothing else is left of what
/// the conversion to v2 created).
fn write_metadata(metadata: &RawValue, drop_annotations: bool, out: &mut Vec<u8>) {
    let _ = rewrite_object::<()>(
        metadata,
        out,
        &["annotations"],
        |key, annotations, metadata| {
            if !drop_annotations {
                let drop = |_: &str, _: &RawValue, _: &mut ObjectOut<'_>| Ok(());
                rewrite_object(annotations, metadata.key(key), &[V3_FIELDS_ANNOTATION], drop, |_| Ok(()))?;
            }
            Ok(())
        },
        |_| Ok(()),
    );
}

/// The spec with the manifest in a v3 mask and the kept fields back in their places.
fn write_spec(spec: &RawValue, kept: &Kept<'_>, out: &mut Vec<u8>) -> Result<(), ConversionError> {
    let inline = field(spec, "blueprintMask").map(|(_, mask)| mask);
    let restores = !kept.storage_classes.is_empty() || !kept.config_refs.is_empty();
    let manifest = field(spec, "blueprint").map(|(_, manifest)| manifest);
    if restores && manifest.is_some_and(|m| !is_object(m)) {
        return Err(ConversionError::NotAnObjectAt { path: "spec.blueprint" });
    }
    // v3's mask: the manifest, or (without one) the kept fields: a v2 edit that gave it a manifest wins.
    let write_mask = |mask: &mut ObjectOut<'_>| {
        let mut fields = ObjectOut::open(mask.key("blueprintMask"));
        match inline {
            Some(manifest) => fields.raw("manifest", manifest),
            None => {
                for (key, value) in kept.mask.iter().flatten() {
                    fields.raw(key, value);
                }
            }
        }
        fields.close();
    };
    rewrite_object(
        spec,
        out,
        &["blueprintMask", "blueprint"],
        |key, value, spec| {
            match key {
                "blueprintMask" => write_mask(spec),
                _ if restores => write_manifest(value, kept, spec.key(key)),
                _ => spec.raw(key, value),
            }
            Ok(())
        },
        |spec| {
            if inline.is_none() && kept.mask.is_some() {
                write_mask(spec);
            }
            if restores && manifest.is_none() {
                spec.key("blueprint").extend_from_slice(b"{}");
            }
            Ok(())
        },
    )
}

fn write_manifest(manifest: &RawValue, kept: &Kept<'_>, out: &mut Vec<u8>) {
    let _ = rewrite_object::<()>(
        manifest,
        out,
        &["dogus", "config"],
        |key, value, manifest| {
            match key {
                "dogus" if super::json::is_array(value) => {
                    let mut dogus = ArrayOut::open(manifest.key(key));
                    let mut seen = Occurrences::default();
                    let _ = for_each_item::<()>(value, |dogu| {
                        let out = dogus.item();
                        let class = is_object(dogu)
                            .then(|| {
                                let name = identity(dogu, "name");
                                let occurrence = seen.next(name.clone());
                                kept.storage_class(&name, occurrence)
                            })
                            .flatten();
                        match class {
                            Some(class) => with_storage_class(dogu, class, out),
                            None => out.extend_from_slice(dogu.get().as_bytes()),
                        }
                        Ok(())
                    });
                    dogus.close();
                }
                "config" if is_object(value) => write_config(value, kept, manifest.key(key)),
                _ => manifest.raw(key, value),
            }
            Ok(())
        },
        |_| Ok(()),
    );
}

/// The dogu with `platformConfig.resource.storageClassName` set to `class` (made where missing; left
/// alone where something else than an object is in the way).
fn with_storage_class(dogu: &RawValue, class: &RawValue, out: &mut Vec<u8>) {
    let set_in = |object: &RawValue, path: &[&str], out: &mut Vec<u8>| set_at(object, path, class, out);
    set_in(dogu, &["platformConfig", "resource", "storageClassName"], out);
}

/// Writes `object` with `value` at the field path `path`, making the objects on the way.
fn set_at(object: &RawValue, path: &[&str], value: &RawValue, out: &mut Vec<u8>) {
    let Some((name, rest)) = path.split_first() else { return };
    let exists = field(object, name).is_some();
    let _ = rewrite_object::<()>(
        object,
        out,
        &[name],
        |key, inner, object| {
            match rest {
                [] => object.raw(key, value),
                _ if is_object(inner) => set_at(inner, rest, value, object.key(key)),
                _ => object.raw(key, inner),
            }
            Ok(())
        },
        |object| {
            if !exists {
                write_new(rest, value, object.key(name));
            }
            Ok(())
        },
    );
}

/// `value` inside new objects along `path` (none: `value` itself).
fn write_new(path: &[&str], value: &RawValue, out: &mut Vec<u8>) {
    match path.split_first() {
        None => out.extend_from_slice(value.get().as_bytes()),
        Some((name, rest)) => {
            let mut object = ObjectOut::open(out);
            write_new(rest, value, object.key(name));
            object.close();
        }
    }
}

/// The config with each kept `configRef` back on its entry, unless a v2 edit gave the entry a value of
/// its own (a value, a Secret) or made it absent or sensitive: then the edit wins.
fn write_config(config: &RawValue, kept: &Kept<'_>, out: &mut Vec<u8>) {
    let entries = |dogu: Option<&str>, list: &RawValue, out: &mut Vec<u8>| {
        let mut entries = ArrayOut::open(out);
        let mut seen = Occurrences::default();
        let _ = for_each_item::<()>(list, |entry| {
            let out = entries.item();
            let config_ref = is_object(entry)
                .then(|| {
                    let key = identity(entry, "key");
                    let occurrence = seen.next(key.clone());
                    let place = EntryPlace { dogu: dogu.map(Into::into), key, occurrence };
                    kept.config_ref(&place)
                })
                .flatten()
                .filter(|_| !edited_by_v2(entry));
            match config_ref {
                Some(config_ref) => set_at(entry, &["configRef"], config_ref, out),
                None => out.extend_from_slice(entry.get().as_bytes()),
            }
            Ok(())
        });
        entries.close();
    };
    let _ = rewrite_object::<()>(
        config,
        out,
        &["dogus", "global"],
        |key, value, config| {
            match key {
                "dogus" if is_object(value) => {
                    let mut object = ObjectOut::open(config.key(key));
                    let _ = super::json::for_each_field::<()>(value, |dogu, list| {
                        let out = object.key(&dogu);
                        if super::json::is_array(list) {
                            entries(Some(&dogu), list, out);
                        } else {
                            out.extend_from_slice(list.get().as_bytes());
                        }
                        Ok(())
                    });
                    object.close();
                }
                "global" if super::json::is_array(value) => entries(None, value, config.key(key)),
                _ => config.raw(key, value),
            }
            Ok(())
        },
        |_| Ok(()),
    );
}

/// Whether a v2 edit gave the entry what excludes a `configRef` in v3: a value, a Secret, `absent` or
/// `sensitive`.
fn edited_by_v2(entry: &RawValue) -> bool {
    let has = |name: &str| field(entry, name).is_some();
    let set = |name: &str| field(entry, name).is_some_and(|(_, value)| is_true(value));
    has("value") || has("secretRef") || set("absent") || set("sensitive")
}
