// libFuzzer targets for every decoder that reads bytes from disk or text from a user.
// Built and run by scripts/fuzz.sh; the target is chosen by STRATA_FUZZ_TARGET:
//
//   header      the file header and the two checkpoint slots (first 1536 bytes of a file)
//   frame       a frame at a fixed offset; its checksum is recomputed first, so the fuzzer
//               reaches the length checks and LZ4 instead of stopping at XXH64
//   page        a page payload (leaf or branch), then every leaf entry
//   log         a log frame payload (one commit's operations)
//   checkpoint  a checkpoint frame payload
//   catalog     a catalog entry (JSON), and the field table built from it
//   record      a record, as RecordValue and as a Codable model
//   key         a key, decoded into its elements
//   query       storedump's text query language: parse, plan and evaluate
//
// With STRATA_FUZZ_EXTRACT=DIR and STRATA_FUZZ_FILES=a.strata:b.strata the binary instead
// writes a seed corpus for each target, taken from those real files, and exits.
import Foundation
@testable import Strata
@testable import StrataEngine

enum FuzzTarget: String, CaseIterable {
    case header, frame, page, log, checkpoint, catalog, record, key, query
}

let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["STRATA_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("set STRATA_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return target
}()

let context = CorruptionContext(path: "fuzz", offset: 1 << 40, structure: "fuzz input")
let limits = NodeLimits(pageSize: 4096)
let fieldTable = FieldTable(names: (0 ..< 64).map { "f\($0)" })
let fuzzSalt: UInt64 = 0x5EED

/// A model with every kind of field the Codable decoder handles, nested and optional.
struct FuzzModel: Codable {
    struct Inner: Codable { var f0: Int; var f1: [String]?; var f2: [String: Double] }
    var f0: Int64
    var f1: String
    var f2: Double?
    var f3: [Inner]
    var f4: Date?
    var f5: UUID?
    var f6: Data?
    var f7: Bool
    var f8: [Int: String]?
}

let sampleRecord = RecordValue.object([
    .init(name: "age", value: .int(41)), .init(name: "name", value: .string("Ada")), .init(name: "score", value: .double(.nan)),
    .init(name: "address", value: .object([.init(name: "city", value: .string("Boston"))])),
])

func fuzzOne(_ bytes: [UInt8]) {
    switch target {
    case .header:
        _ = try? FileHeader.decode(bytes, path: "fuzz").checkVersion(path: "fuzz", readOnly: true)
        for start in [512, 1024] where bytes.count > start {
            _ = CheckpointSlot.decode(Array(bytes[start...].prefix(FileHeader.slotSize)), salt: fuzzSalt)
        }
    case .frame:
        var frame = bytes
        let offset: UInt64 = 4096
        if frame.count >= FrameHeader.size {
            let stored = Int(UInt32(littleEndian: frame.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self) }))
            let end = min(frame.count, FrameHeader.size + stored)
            let checksum = frame.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[8 ..< end]), seed: Frame.seed(salt: fuzzSalt, offset: offset)) }
            withUnsafeBytes(of: checksum.littleEndian) { frame.replaceSubrange(0 ..< 8, with: $0) }
        }
        _ = try? frame.withUnsafeBytes { raw in
            let header = try FrameHeader.parse(raw, context: context)
            return try Frame.payload(of: raw, header: header, offset: offset, salt: fuzzSalt, context: context)
        }
    case .page:
        guard let node = try? PageCodec.decode(bytes, address: FrameAddress(offset: 1 << 40, length: UInt32(bytes.count + 24)), limits: limits, context: context) else { return }
        if case .leaf(let leaf) = node {
            for i in 0 ..< leaf.count { leaf.withEntry(i) { key, _ in _ = key.count } }
        }
    case .log:
        _ = try? LogBatchReader.read(bytes, context: context) { _ in }
    case .checkpoint:
        _ = try? CheckpointRecord.decode(bytes, at: 1 << 40, context: context)
    case .catalog:
        if let entry = try? JSONDecoder().decode(CatalogEntry.self, from: Data(bytes)) { _ = CollectionState(entry).current }
    case .record:
        _ = try? RecordValue.decode(bytes, fields: fieldTable, collection: "fuzz")
        _ = try? RecordDecoder.decode(FuzzModel.self, from: bytes, fields: fieldTable, collection: "fuzz")
    case .key:
        _ = try? Key(bytes: bytes).elements()
    case .query:
        guard let predicate = try? TextPredicate.parse(String(decoding: bytes, as: UTF8.self)) else { return }
        _ = CompiledTextPredicate(predicate).matches(sampleRecord)
        _ = predicate.conjuncts(keyTypes: ["age": "int", "name": "string", "score": "double", "id": "uint"])
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzOne(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    if let directory = environment["STRATA_FUZZ_EXTRACT"], let files = environment["STRATA_FUZZ_FILES"] {
        do {
            var seeds = SeedWriter(directory: directory)
            for file in files.split(separator: ":") { try seeds.extract(from: String(file)) }
            seeds.writeQuerySeeds()
            print("seeds: " + seeds.counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("seed extraction failed: \(error)\n".utf8))
            exit(1)
        }
    }
    _ = target
    return 0
}

/// Writes seeds taken from real files: up to `perFile` of each kind from each file.
struct SeedWriter {
    let directory: String
    var counts: [String: Int] = [:]
    var taken: [String: Int] = [:]
    let perFile = 40
    let maxSeedBytes = 64 << 10

    init(directory: String) { self.directory = directory }

    mutating func write(_ bytes: [UInt8], as target: FuzzTarget, from file: String) {
        guard bytes.count <= maxSeedBytes, taken[target.rawValue, default: 0] < perFile else { return }
        let folder = directory + "/" + target.rawValue
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let name = String(XXH64.hash(bytes), radix: 16)
        FileManager.default.createFile(atPath: folder + "/" + name, contents: Data(bytes))
        taken[target.rawValue, default: 0] += 1
        counts[target.rawValue, default: 0] += 1
    }

    mutating func extract(from path: String) throws {
        taken = [:]
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        write(Array(data.prefix(1536)), as: .header, from: path)
        // Every frame, in file order: the raw frame, re-addressed to the offset the frame
        // target uses, and its payload for the structure's own target.
        var position = Int(FileHeader.dataStart)
        while position + FrameHeader.size <= data.count {
            let header = try data[position...].withUnsafeBytes { try FrameHeader.parse($0, context: context) }
            let frameBytes = Array(data[position ..< min(data.count, position + header.frameLength)])
            let payload = try Frame.payload(of: frameBytes, header: header, offset: UInt64(position), salt: try FileHeader.decode(Array(data.prefix(512)), path: path).salt, context: context)
            write(frameBytes, as: .frame, from: path)
            switch header.type {
            case .page: write(payload, as: .page, from: path)
            case .log: write(payload, as: .log, from: path)
            case .checkpoint: write(payload, as: .checkpoint, from: path)
            case .value: break
            }
            position += header.frameLength
        }
        var options = Database.Options(readOnly: true)
        options.cacheSize = 1 << 20
        let database = try Database(path: path, options: options)
        let snapshot = try database.snapshot()
        for tree in snapshot.treeNames {
            var seen = 0
            try snapshot.scan(tree) { key, value in
                write(Array(key), as: .key, from: path)
                if tree == CatalogEntry.tree { write(Array(value), as: .catalog, from: path) }
                if tree.hasPrefix("c:") { write(Array(value), as: .record, from: path) }
                seen += 1
                return seen < 10
            }
        }
    }

    mutating func writeQuerySeeds() {
        taken = [:]
        let queries = [
            "age > 40 AND city != 'Boston'", "name LIKE 'A*' OR NOT (age BETWEEN 20 AND 30)", "id IN (1, 2, 3)",
            "address.city BEGINSWITH 'Bo'", "name CONTAINS \"da\"", "score >= -1.5e3 AND flag = true AND x = null",
            "tags NOT IN ('a', 'b')", "name NOT LIKE '?d*'", "((age < 1))",
        ]
        for query in queries { write(Array(query.utf8), as: .query, from: "built-in") }
    }
}
