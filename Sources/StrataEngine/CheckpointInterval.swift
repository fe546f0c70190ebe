/// How much log an automatic checkpoint lets pass (`Database.Options.checkpointLogBytes`,
/// `checkpointLogBytesLimit`): as much as the store's live data, but at least the minimum
/// and at most the limit (four times the minimum unless the options name one).
///
/// Why it grows with the data: a checkpoint writes every leaf changed since the last one,
/// and writes scattered over a large tree change most of its leaves, so at a fixed interval
/// each checkpoint writes about the whole tree: bytes written per byte committed grow with
/// the store. W1's load of 10M records with a 64 MiB interval wrote its file at 3.65 times
/// the bytes of the records it committed, at 218k–277k records/s; with 256 MiB, 2.29 times
/// and 324k–347k (two alternating runs each). An interval as large as the data bounds what
/// checkpoints add to about one more time the bytes committed, whatever the size.
///
/// What it costs: an open after a crash replays the log since the last checkpoint, so the
/// limit bounds that replay (and the memory of the changes not yet checkpointed). A store
/// smaller than the minimum checkpoints exactly as with a fixed interval.
struct CheckpointInterval: Equatable {
    let minimum: UInt64
    let limit: UInt64

    init(minimum: UInt64, limit: UInt64) {
        self.minimum = minimum
        self.limit = max(limit, minimum)
    }

    /// The interval `options` ask for: `checkpointLogBytesLimit`, or four times
    /// `checkpointLogBytes` when they name no limit.
    init(_ options: Database.Options) {
        let fourTimes = options.checkpointLogBytes.multipliedReportingOverflow(by: 4)
        self.init(minimum: options.checkpointLogBytes,
                  limit: options.checkpointLogBytesLimit ?? (fourTimes.overflow ? .max : fourTimes.partialValue))
    }

    /// The log bytes after which a checkpoint is due, for a store of `liveData` bytes.
    func logBytes(liveData: UInt64) -> UInt64 {
        min(max(minimum, liveData), limit)
    }
}
