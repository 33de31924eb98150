//! v3 → v2: the mask's manifest inline, the rest of what v2 cannot hold into the annotation.
//!
//! Two passes over the object's text: the first finds what is kept (borrowing it), the second writes
//! the object without it and with the annotation.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::json::{
    ArrayOut, Occurrences, field, for_each_field, for_each_item, identity, is_array, is_object, rewrite_object,
};
use super::kept::{Created, EntryPlace, Kept};
use super::{ConversionError, V3_FIELDS_ANNOTATION};

/// Writes the v3 Blueprint `object` as v2 (`api_version`) into `out`.
pub(super) fn write(object: &RawValue, api_version: &str, out: &mut Vec<u8>) -> Result<(), ConversionError> {
    let spec = field(object, "spec").map(|(_, spec)| spec);
    let mut kept = spec.map(find).transpose()?.unwrap_or_default();
    let metadata = field(object, "metadata").map(|(_, metadata)| metadata);
    if !kept.is_empty() {
        kept.created = match metadata {
            None => Created::Metadata,
            Some(metadata) if !is_object(metadata) => return Err(ConversionError::NotAnObjectAt { path: "metadata" }),
            Some(metadata) => match field(metadata, "annotations") {
                None => Created::Annotations,
                Some((_, annotations)) if !is_object(annotations) => {
                    return Err(ConversionError::NotAnObjectAt { path: "metadata.annotations" });
                }
                Some(_) => Created::Nothing,
            },
        };
    }
    let annotation = (!kept.is_empty()).then(|| kept.write());
    let annotation = annotation.as_deref();
    rewrite_object(
        object,
        out,
        &["apiVersion", "metadata", "spec"],
        |key, value, root| {
            match key {
                "apiVersion" => root.string(key, api_version),
                "metadata" => match annotation {
                    Some(annotation) => write_metadata(value, annotation, root.key(key)),
                    None => root.raw(key, value),
                },
                _ if is_object(value) => write_spec(value, root.key(key)),
                _ => root.raw(key, value),
            }
            Ok(())
        },
        |root| {
            if let (Some(annotation), None) = (annotation, metadata) {
                let mut metadata = super::json::ObjectOut::open(root.key("metadata"));
                let mut annotations = super::json::ObjectOut::open(metadata.key("annotations"));
                annotations.string(V3_FIELDS_ANNOTATION, annotation);
                annotations.close();
                metadata.close();
            }
            Ok(())
        },
    )
}

/// What v2 cannot hold of the spec: the mask besides its manifest, storage classes, config references.
fn find(spec: &RawValue) -> Result<Kept<'_>, ConversionError> {
    let mut kept = Kept::default();
    if let Some((_, mask)) = field(spec, "blueprintMask") {
        if !is_object(mask) {
            return Err(ConversionError::NotAnObjectAt { path: "spec.blueprintMask" });
        }
        let mut fields = Vec::new();
        let _ = for_each_field::<()>(mask, |key, value| {
            if key != "manifest" {
                fields.push((key, value));
            }
            Ok(())
        });
        let has_manifest = field(mask, "manifest").is_some();
        if !fields.is_empty() || !has_manifest {
            kept.mask = Some(dedup_last(fields));
        }
    }
    let Some((_, manifest)) = field(spec, "blueprint").filter(|(_, m)| is_object(m)) else { return Ok(kept) };
    if let Some((_, dogus)) = field(manifest, "dogus") {
        let mut seen = Occurrences::default();
        let _ = for_each_item::<()>(dogus, |dogu| {
            if !is_object(dogu) {
                return Ok(());
            }
            let name = identity(dogu, "name");
            let occurrence = seen.next(name.clone());
            let class = field(dogu, "platformConfig")
                .and_then(|(_, platform)| field(platform, "resource"))
                .and_then(|(_, resource)| field(resource, "storageClassName"));
            if let Some((_, class)) = class {
                kept.storage_classes.push(((name, occurrence), class));
            }
            Ok(())
        });
    }
    if let Some((_, config)) = field(manifest, "config") {
        for_each_entry_list(config, |dogu, entries| {
            let mut seen = Occurrences::default();
            let _ = for_each_item::<()>(entries, |entry| {
                if !is_object(entry) {
                    return Ok(());
                }
                let key = identity(entry, "key");
                let occurrence = seen.next(key.clone());
                if let Some((_, config_ref)) = field(entry, "configRef") {
                    kept.config_refs.push((EntryPlace { dogu: dogu.clone(), key, occurrence }, config_ref));
                }
                Ok(())
            });
        });
    }
    Ok(kept)
}

/// Of fields given more than once, the last (as a JSON reader takes them).
fn dedup_last<'a>(fields: Vec<(Cow<'a, str>, &'a RawValue)>) -> Vec<(Cow<'a, str>, &'a RawValue)> {
    let mut kept: Vec<(Cow<'a, str>, &'a RawValue)> = Vec::with_capacity(fields.len());
    for (key, value) in fields {
        match kept.iter_mut().find(|(k, _)| *k == key) {
            Some(existing) => existing.1 = value,
            None => kept.push((key, value)),
        }
    }
    kept
}

/// Calls `visit` with each list of config entries of `config`: each dogu's (by name), the global one
/// (`None`).
fn for_each_entry_list<'a>(config: &'a RawValue, mut visit: impl FnMut(Option<Cow<'a, str>>, &'a RawValue)) {
    let _ = for_each_field::<()>(config, |field_name, value| {
        match field_name.as_ref() {
            "dogus" if is_object(value) => {
                let _ = for_each_field::<()>(value, |dogu, entries| {
                    if is_array(entries) {
                        visit(Some(dogu), entries);
                    }
                    Ok(())
                });
            }
            "global" if is_array(value) => visit(None, value),
            _ => {}
        }
        Ok(())
    });
}

/// The metadata with the annotation (replacing one of that name).
fn write_metadata(metadata: &RawValue, annotation: &str, out: &mut Vec<u8>) {
    let has_annotations = field(metadata, "annotations").is_some();
    let _ = rewrite_object::<()>(
        metadata,
        out,
        &["annotations"],
        |key, annotations, object| {
            let _ = rewrite_object::<()>(
                annotations,
                object.key(key),
                &[V3_FIELDS_ANNOTATION],
                |_, _, _| Ok(()),
                |annotations| {
                    annotations.string(V3_FIELDS_ANNOTATION, annotation);
                    Ok(())
                },
            );
            Ok(())
        },
        |object| {
            if !has_annotations {
                let mut annotations = super::json::ObjectOut::open(object.key("annotations"));
                annotations.string(V3_FIELDS_ANNOTATION, annotation);
                annotations.close();
            }
            Ok(())
        },
    );
}

/// The spec without what v2 cannot hold: the mask's manifest in the mask's place (no mask when it
/// had none), no storage classes, no config references.
fn write_spec(spec: &RawValue, out: &mut Vec<u8>) {
    let _ = rewrite_object::<()>(
        spec,
        out,
        &["blueprintMask", "blueprint"],
        |key, value, spec| {
            match key {
                "blueprintMask" => {
                    if let Some((_, manifest)) = field(value, "manifest") {
                        spec.raw(key, manifest);
                    }
                }
                _ if is_object(value) => write_manifest(value, spec.key(key)),
                _ => spec.raw(key, value),
            }
            Ok(())
        },
        |_| Ok(()),
    );
}

fn write_manifest(manifest: &RawValue, out: &mut Vec<u8>) {
    let _ = rewrite_object::<()>(
        manifest,
        out,
        &["dogus", "config"],
        |key, value, manifest| {
            match key {
                "dogus" if is_array(value) => {
                    let mut dogus = ArrayOut::open(manifest.key(key));
                    let _ = for_each_item::<()>(value, |dogu| {
                        without_storage_class(dogu, dogus.item());
                        Ok(())
                    });
                    dogus.close();
                }
                "config" if is_object(value) => write_config(value, manifest.key(key)),
                _ => manifest.raw(key, value),
            }
            Ok(())
        },
        |_| Ok(()),
    );
}

/// A dogu without `platformConfig.resource.storageClassName`.
fn without_storage_class(dogu: &RawValue, out: &mut Vec<u8>) {
    let class = field(dogu, "platformConfig")
        .and_then(|(_, platform)| field(platform, "resource"))
        .and_then(|(_, resource)| field(resource, "storageClassName"));
    if class.is_none() {
        out.extend_from_slice(dogu.get().as_bytes());
        return;
    }
    let _ = rewrite_object::<()>(
        dogu,
        out,
        &["platformConfig"],
        |key, platform, dogu| {
            rewrite_object::<()>(
                platform,
                dogu.key(key),
                &["resource"],
                |key, resource, platform| {
                    let drop_class = |_: &str, _: &RawValue, _: &mut super::json::ObjectOut<'_>| Ok(());
                    rewrite_object(resource, platform.key(key), &["storageClassName"], drop_class, |_| Ok(()))
                },
                |_| Ok(()),
            )
        },
        |_| Ok(()),
    );
}

/// The config with no entry's `configRef`.
fn write_config(config: &RawValue, out: &mut Vec<u8>) {
    let entries = |list: &RawValue, out: &mut Vec<u8>| {
        let mut entries = ArrayOut::open(out);
        let _ = for_each_item::<()>(list, |entry| {
            let out = entries.item();
            if is_object(entry) && field(entry, "configRef").is_some() {
                let _ = rewrite_object::<()>(entry, out, &["configRef"], |_, _, _| Ok(()), |_| Ok(()));
            } else {
                out.extend_from_slice(entry.get().as_bytes());
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
                    let mut object = super::json::ObjectOut::open(config.key(key));
                    let _ = for_each_field::<()>(value, |dogu, list| {
                        let out = object.key(&dogu);
                        if is_array(list) {
                            entries(list, out);
                        } else {
                            out.extend_from_slice(list.get().as_bytes());
                        }
                        Ok(())
                    });
                    object.close();
                }
                "global" if is_array(value) => entries(value, config.key(key)),
                _ => config.raw(key, value),
            }
            Ok(())
        },
        |_| Ok(()),
    );
}
