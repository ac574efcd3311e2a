//! The `FileDescriptorProto`s embedded in the Envoy binary, kept byte for byte.
//!
//! C++ protobuf codegen stores each .proto's serialized `FileDescriptorProto` in a
//! NUL-terminated `descriptor_table_protodef_*` array placed in the ELF section `protodesc_cold`.
//! The same binary also holds upb's copies of about a hundred of them (gRPC's xDS client, in
//! `.rodata`), which differ from the C++ ones only by their filled-in `json_name`s: scanning
//! the whole file would find every such file twice with different bytes, so only the section
//! C++ protobuf writes is scanned.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use prost::Message;
use prost_types::FileDescriptorProto;

use crate::Error;

/// The ELF section C++ protobuf puts `descriptor_table_protodef_*` in
/// (`ABSL_ATTRIBUTE_SECTION_VARIABLE(protodesc_cold)` in the generated .pb.cc files).
pub const SECTION: &str = "protodesc_cold";

/// The files kept, with everything they import: Envoy's API and what it is written with.
pub const KEPT_PREFIXES: [&str; 5] = ["envoy/", "xds/", "udpa/", "validate/", "google/protobuf/"];

/// One embedded `FileDescriptorProto`: its exact bytes and the parts of it that decide which
/// files are kept and in which order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedFile {
    pub name: String,
    pub dependencies: Vec<String>,
    /// Full names of every message it declares, nested ones included.
    pub messages: Vec<String>,
    pub bytes: Vec<u8>,
}

/// The selected files in dependency order, and what the selection left out.
#[derive(Debug)]
pub struct Selection {
    pub files: Vec<EmbeddedFile>,
    /// How many distinct files the binary embeds.
    pub found: usize,
    pub dropped: Vec<String>,
}

impl Selection {
    pub fn message_count(&self) -> usize {
        self.files.iter().map(|f| f.messages.len()).sum()
    }

    /// A serialized `google.protobuf.FileDescriptorSet`: field 1 repeated, one file each, the
    /// embedded bytes unchanged (decoding and re-encoding would drop the extension options,
    /// `validate.rules` among them, which prost-types does not know).
    pub fn encode_set(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.files.iter().map(|f| f.bytes.len() + 4).sum());
        for file in &self.files {
            out.push(0x0A);
            prost::encoding::encode_varint(file.bytes.len() as u64, &mut out);
            out.extend_from_slice(&file.bytes);
        }
        out
    }
}

/// Reads the `protodesc_cold` section of the Envoy binary at `path` and returns every
/// descriptor in it, deduplicated by name.
pub fn read_binary(path: &Path) -> Result<Vec<EmbeddedFile>, Error> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    let mut file = File::open(path).map_err(io)?;
    let section = elf_section(&mut file, SECTION).map_err(|e| match e {
        ElfError::Io(source) => io(source),
        ElfError::Format(message) => Error::Elf { path: path.to_owned(), message },
    })?;
    let files = dedupe(scan(&section))?;
    if files.is_empty() {
        return Err(Error::Elf {
            path: path.to_owned(),
            message: format!("section {SECTION} holds no FileDescriptorProto"),
        });
    }
    Ok(files)
}

#[derive(Debug)]
enum ElfError {
    Io(std::io::Error),
    Format(String),
}

impl From<std::io::Error> for ElfError {
    fn from(e: std::io::Error) -> Self {
        ElfError::Io(e)
    }
}

/// The bytes of the named section of a 64-bit little-endian ELF file (Envoy's release builds
/// are x86_64 and aarch64 Linux), read without loading the other ~100 MB.
fn elf_section(file: &mut File, name: &str) -> Result<Vec<u8>, ElfError> {
    let format = |m: &str| ElfError::Format(m.to_owned());
    let header = read_at(file, 0, 64)?;
    if header[..4] != *b"\x7fELF" {
        return Err(format("not an ELF file"));
    }
    if header[4] != 2 || header[5] != 1 {
        return Err(format("not a 64-bit little-endian ELF file"));
    }
    let shoff = u64_at(&header, 0x28);
    let shentsize = u64::from(u16_at(&header, 0x3A));
    let shnum = u64::from(u16_at(&header, 0x3C));
    let shstrndx = u64::from(u16_at(&header, 0x3E));
    if shentsize < 64 || shnum == 0 || shstrndx >= shnum {
        return Err(format("unexpected section header table"));
    }
    let table = read_at(file, shoff, shentsize * shnum)?;
    let entry = |i: u64| {
        let e = &table[(i * shentsize) as usize..][..64];
        // sh_name, sh_offset, sh_size
        (u32_at(e, 0) as usize, u64_at(e, 0x18), u64_at(e, 0x20))
    };
    let (_, strtab_off, strtab_size) = entry(shstrndx);
    let strtab = read_at(file, strtab_off, strtab_size)?;
    for i in 0..shnum {
        let (name_off, offset, size) = entry(i);
        let section_name = strtab.get(name_off..).and_then(|s| s.split(|&b| b == 0).next()).unwrap_or_default();
        if section_name == name.as_bytes() {
            return read_at(file, offset, size);
        }
    }
    Err(ElfError::Format(format!("no section {name}: not a build whose C++ protobuf code places descriptors there")))
}

fn read_at(file: &mut File, offset: u64, len: u64) -> Result<Vec<u8>, ElfError> {
    let len = usize::try_from(len).map_err(|_| ElfError::Format("section too large".into()))?;
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0; len];
    file.read_exact(&mut buf)?;
    Ok(buf)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Every serialized `FileDescriptorProto` in `bytes`, in the order they appear.
///
/// A candidate starts where `0x0A <varint len> <len bytes of a name ending in ".proto"> 0x12`
/// is (field 1 `name`, then field 2 `package`: protoc writes fields in number order). From there
/// the protobuf wire format is walked while tags are FileDescriptorProto's (fields 1..=14) and
/// stops at the first other tag — the NUL terminator is tag 0 — or at a second field 1, where
/// the next file would begin. A candidate prost-types cannot decode is not a descriptor, and
/// scanning goes on one byte later; after a descriptor it goes on past its end, so no
/// descriptor is found inside another.
pub fn scan(bytes: &[u8]) -> Vec<EmbeddedFile> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = bytes[at..].iter().position(|&b| b == 0x0A) {
        let start = at + offset;
        match candidate(bytes, start) {
            Some((name, end)) => match FileDescriptorProto::decode(&bytes[start..end]) {
                Ok(proto) if proto.name() == name => {
                    found.push(embedded(proto, bytes[start..end].to_vec()));
                    at = end;
                }
                _ => at = start + 1,
            },
            None => at = start + 1,
        }
    }
    found
}

/// The name and the end of the descriptor that would start at `start`, if one can.
fn candidate(bytes: &[u8], start: usize) -> Option<(String, usize)> {
    let (len, name_start) = varint(bytes, start + 1)?;
    let len = usize::try_from(len).ok().filter(|&l| (7..=1024).contains(&l))?;
    let name = bytes.get(name_start..name_start + len)?;
    if !name.ends_with(b".proto") || bytes.get(name_start + len) != Some(&0x12) {
        return None;
    }
    if !name.iter().all(|&b| b.is_ascii_alphanumeric() || b"_-./".contains(&b)) {
        return None;
    }
    let name = String::from_utf8(name.to_vec()).ok()?;
    Some((name, walk(bytes, start)))
}

/// Where the wire-format walk from `start` stops (see [`scan`]).
fn walk(bytes: &[u8], start: usize) -> usize {
    let mut at = start;
    let mut seen_name = false;
    loop {
        let Some((tag, value_start)) = varint(bytes, at) else { return at };
        let field = tag >> 3;
        if !(1..=14).contains(&field) {
            return at;
        }
        if field == 1 {
            if seen_name {
                return at;
            }
            seen_name = true;
        }
        let end = match tag & 7 {
            0 => varint(bytes, value_start).map(|(_, end)| end),
            1 => Some(value_start + 8),
            2 => varint(bytes, value_start)
                .and_then(|(len, data)| usize::try_from(len).ok().and_then(|len| data.checked_add(len))),
            5 => Some(value_start + 4),
            _ => None,
        };
        match end {
            Some(end) if end <= bytes.len() => at = end,
            _ => return at,
        }
    }
}

/// A base-128 varint at `at`: its value and where it ends.
fn varint(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.get(at..)?.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return Some((value, at + i + 1));
        }
    }
    None
}

fn embedded(proto: FileDescriptorProto, bytes: Vec<u8>) -> EmbeddedFile {
    fn collect(prefix: &str, messages: &[prost_types::DescriptorProto], out: &mut Vec<String>) {
        for message in messages {
            let name = format!("{prefix}{}", message.name());
            collect(&format!("{name}."), &message.nested_type, out);
            out.push(name);
        }
    }
    let prefix = if proto.package().is_empty() { String::new() } else { format!("{}.", proto.package()) };
    let mut messages = Vec::new();
    collect(&prefix, &proto.message_type, &mut messages);
    EmbeddedFile { name: proto.name().to_owned(), dependencies: proto.dependency, messages, bytes }
}

/// One file per name; the same name with other bytes means the scan read something that is not
/// the build's own descriptor, and guessing which one is would make the schema wrong.
pub fn dedupe(files: Vec<EmbeddedFile>) -> Result<Vec<EmbeddedFile>, Error> {
    let mut by_name: BTreeMap<String, EmbeddedFile> = BTreeMap::new();
    for file in files {
        match by_name.get(&file.name) {
            Some(seen) if seen.bytes != file.bytes => {
                return Err(Error::DuplicateFile {
                    name: file.name,
                    first_len: seen.bytes.len(),
                    second_len: file.bytes.len(),
                });
            }
            Some(_) => {}
            None => {
                by_name.insert(file.name.clone(), file);
            }
        }
    }
    Ok(by_name.into_values().collect())
}

/// Keeps the files under [`KEPT_PREFIXES`] and those declaring one of `type_names` (the
/// messages extensions are configured with), with everything they import, and orders them so
/// that each file follows its dependencies (ties by name).
pub fn select(files: Vec<EmbeddedFile>, type_names: &BTreeSet<String>) -> Result<Selection, Error> {
    let found = files.len();
    let by_name: BTreeMap<&str, &EmbeddedFile> = files.iter().map(|f| (f.name.as_str(), f)).collect();
    let declaring: BTreeMap<&str, &str> =
        files.iter().flat_map(|f| f.messages.iter().map(move |m| (m.as_str(), f.name.as_str()))).collect();

    let mut roots: Vec<&str> =
        files.iter().filter(|f| KEPT_PREFIXES.iter().any(|p| f.name.starts_with(p))).map(|f| f.name.as_str()).collect();
    for type_name in type_names {
        let file = declaring.get(type_name.as_str()).ok_or_else(|| Error::UnknownType(type_name.clone()))?;
        roots.push(file);
    }

    let mut kept = BTreeSet::new();
    while let Some(name) = roots.pop() {
        if kept.insert(name) {
            for dependency in &by_name[name].dependencies {
                if !by_name.contains_key(dependency.as_str()) {
                    return Err(Error::MissingDependency { file: name.to_owned(), dependency: dependency.clone() });
                }
                roots.push(dependency);
            }
        }
    }

    // Kahn's algorithm, always taking the smallest ready name: one order for one set of files.
    let mut waiting: BTreeMap<&str, BTreeSet<&str>> =
        kept.iter().map(|&name| (name, by_name[name].dependencies.iter().map(String::as_str).collect())).collect();
    let mut order = Vec::with_capacity(kept.len());
    while let Some(next) = waiting.iter().find(|(_, deps)| deps.is_empty()).map(|(&name, _)| name) {
        waiting.remove(next);
        for deps in waiting.values_mut() {
            deps.remove(next);
        }
        order.push(next);
    }
    if !waiting.is_empty() {
        return Err(Error::DependencyCycle(waiting.keys().map(|n| (*n).to_owned()).collect()));
    }

    let dropped = files.iter().filter(|f| !kept.contains(f.name.as_str())).map(|f| f.name.clone()).collect();
    let order: Vec<String> = order.into_iter().map(str::to_owned).collect();
    let mut files: BTreeMap<String, EmbeddedFile> = files.into_iter().map(|f| (f.name.clone(), f)).collect();
    let files = order.iter().map(|name| files.remove(name).expect("kept files exist")).collect();
    Ok(Selection { files, found, dropped })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::DescriptorProto;

    fn proto(name: &str, package: &str, deps: &[&str], messages: &[&str]) -> FileDescriptorProto {
        FileDescriptorProto {
            name: Some(name.into()),
            package: Some(package.into()),
            dependency: deps.iter().map(|d| (*d).into()).collect(),
            message_type: messages
                .iter()
                .map(|m| DescriptorProto {
                    name: Some((*m).into()),
                    nested_type: vec![DescriptorProto { name: Some("Inner".into()), ..Default::default() }],
                    ..Default::default()
                })
                .collect(),
            syntax: Some("proto3".into()),
            ..Default::default()
        }
    }

    #[test]
    fn finds_a_descriptor_between_garbage_and_its_nul() {
        let encoded = proto("envoy/a/v3/a.proto", "envoy.a.v3", &["google/protobuf/any.proto"], &["A"]).encode_to_vec();
        // Garbage that starts like a candidate (0x0A, a length) but is none, then the file,
        // its NUL terminator and more garbage.
        let mut blob = vec![0x0A, 0x05, b'x', 0xFF, 0x0A, 0x0A, 0x12, 0x00];
        blob.extend_from_slice(&encoded);
        blob.push(0);
        blob.extend_from_slice(&[0x0A, 0x03, 0x01, 0x02]);

        let files = scan(&blob);
        assert_eq!(files.len(), 1);
        let file = &files[0];
        assert_eq!(file.name, "envoy/a/v3/a.proto");
        assert_eq!(file.bytes, encoded, "the bytes are the file's, unchanged and without the NUL");
        assert_eq!(file.dependencies, ["google/protobuf/any.proto"]);
        assert_eq!(file.messages, ["envoy.a.v3.A.Inner", "envoy.a.v3.A"]);
    }

    #[test]
    fn a_second_name_field_starts_the_next_file() {
        let a = proto("a/a.proto", "a", &[], &[]).encode_to_vec();
        let b = proto("b/b.proto", "b", &["a/a.proto"], &[]).encode_to_vec();
        let blob = [a.as_slice(), b.as_slice()].concat();
        let files = scan(&blob);
        assert_eq!(files.iter().map(|f| f.bytes.as_slice()).collect::<Vec<_>>(), [a.as_slice(), b.as_slice()]);
    }

    #[test]
    fn keeps_api_files_and_their_imports_in_dependency_order() {
        let file = |p: FileDescriptorProto| embedded(p.clone(), p.encode_to_vec());
        let files = vec![
            file(proto("envoy/z.proto", "envoy", &["other/dep.proto", "google/protobuf/any.proto"], &["Z"])),
            file(proto("google/protobuf/any.proto", "google.protobuf", &[], &["Any"])),
            file(proto("other/dep.proto", "other", &[], &["Dep"])),
            file(proto("other/typed.proto", "other.typed", &[], &["Config"])),
            file(proto("source/internal.proto", "internal", &[], &["Internal"])),
        ];
        let types = BTreeSet::from(["other.typed.Config".to_owned()]);
        let selection = select(dedupe(files).unwrap(), &types).unwrap();
        let names: Vec<&str> = selection.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["google/protobuf/any.proto", "other/dep.proto", "envoy/z.proto", "other/typed.proto"]);
        assert_eq!(selection.dropped, ["source/internal.proto"]);
        assert_eq!(selection.found, 5);

        let set = prost_types::FileDescriptorSet::decode(selection.encode_set().as_slice()).unwrap();
        assert_eq!(set.file.len(), 4);
    }

    #[test]
    fn refuses_a_missing_import_and_a_name_with_two_contents() {
        let a = proto("envoy/a.proto", "envoy", &["envoy/missing.proto"], &[]);
        let files = vec![embedded(a.clone(), a.encode_to_vec())];
        let err = select(files, &BTreeSet::new()).unwrap_err();
        assert!(matches!(err, Error::MissingDependency { ref dependency, .. } if dependency == "envoy/missing.proto"));

        let b1 = proto("envoy/b.proto", "envoy", &[], &["One"]);
        let b2 = proto("envoy/b.proto", "envoy", &[], &["Two"]);
        let err = dedupe(vec![embedded(b1.clone(), b1.encode_to_vec()), embedded(b2.clone(), b2.encode_to_vec())])
            .unwrap_err();
        assert!(matches!(err, Error::DuplicateFile { ref name, .. } if name == "envoy/b.proto"));
    }
}
