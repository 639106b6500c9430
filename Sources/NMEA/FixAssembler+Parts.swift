extension FixAssembler {
    /// One reporting cycle as the assembler holds it: its sentences folded in (`EpochFold`), its sky-view
    /// changes logged (`SkyLog`), how many sentences it has and the time they carry.
    ///
    /// The assembler holds two of the same shape: the open epoch, being assembled, and the closed one, last
    /// delivered and kept as it was until the next timed sentence shows it was really over. Delivery moves
    /// the open epoch into the closed one (`close(into:)`); a wrong end-of-cycle guess moves it back
    /// (`reopen(_:replaying:)`).
    struct Epoch: Sendable {
        /// The sentences folded in: all but GSV.
        var fold = EpochFold()
        /// GSV pages and GSA used-lists in arrival order, replayed into the sky view at delivery.
        var sky = SkyLog()
        /// Sentences added, GSV included.
        var count = 0
        /// UTC time of day of the epoch's timed sentences, milliseconds since midnight. Open epoch: nil until
        /// a timed sentence arrived. Closed epoch: nil unless the epoch may still be reopened (it was closed
        /// by the end-of-cycle rule or the size limit, and no timed sentence came since).
        var time: Int?

        /// Adds one sentence: a GSV page to the sky log only, a GSA to the log and the fold, any other to
        /// the fold.
        /// - Returns: whether the sentence was folded (every kind but GSV).
        @inline(__always)
        mutating func add(_ sentence: DecodedSentence) -> Bool {
            count += 1
            switch sentence.sentence {
            case .gsv(let page):
                sky.append(page, talker: sentence.talker)
                return false
            case .gsa(let gsa):
                sky.append(gsa, talker: sentence.talker)
                fallthrough
            default:
                fold.add(sentence.sentence)
                return true
            }
        }

        /// Hands this epoch's fold, sky log and count to `closed` (whose `time` the caller sets) and starts
        /// this one empty, without a time, keeping the log's storage.
        mutating func close(into closed: inout Epoch) {
            swap(&closed.fold, &fold)  // this fold is reset below: a swap saves copying it
            closed.count = count
            swap(&sky, &closed.sky)
            sky.removeAll()
            fold = EpochFold()
            count = 0
            time = nil
        }

        /// Reopens `closed`, which was delivered too early: this epoch, holding what arrived since, becomes
        /// its continuation — `closed`'s fold as it was, then `since` folded again in order; `closed`'s
        /// sky-view changes, then this one's; both counts; `closed`'s time. `closed` can no longer be
        /// reopened.
        /// - Parameters:
        ///   - closed: the closed epoch; its time must be set.
        ///   - since: the sentences (GSV aside) that arrived since `closed` was delivered, in order.
        mutating func reopen(_ closed: inout Epoch, replaying since: [Sentence]) {
            fold = closed.fold
            for s in since { fold.add(s) }
            closed.sky.append(contentsOf: sky)
            swap(&closed.sky, &sky)
            closed.sky.removeAll()
            count += closed.count
            time = closed.time
            closed.time = nil
        }
    }

    /// What the receiver's sentence order shows about where a cycle ends: the kind of the latest sentence,
    /// the kind that ended the previous cycle and, once the same kind ended two cycles in a row, that kind —
    /// the learned end of cycle, after which an epoch is delivered without waiting for the next one.
    struct CycleOrder: Sendable {
        /// The kind of the latest sentence.
        private var last: Kind?
        /// The kind of the sentence that ended the previous cycle.
        private var previousEnd: Kind?
        /// The learned end of cycle; nil until learned, and again after a wrong guess.
        private var end: Kind?

        /// Notes the kind of a sentence that arrived.
        @inline(__always)
        mutating func noteArrival(of kind: Kind) { last = kind }

        /// Whether `kind` is the learned end of cycle.
        @inline(__always)
        func endsCycle(_ kind: Kind) -> Bool { kind == end }

        /// Notes that a new epoch began: the latest sentence ended the cycle; the second time in a row the
        /// same kind does, it is learned as the end of cycle.
        mutating func cycleEnded() {
            guard let kind = last else { return }
            if kind == previousEnd { end = kind }
            previousEnd = kind
        }

        /// Forgets the learned end of cycle and the previous one (an epoch delivered on the guess went on).
        mutating func forget() {
            end = nil
            previousEnd = nil
        }
    }
}
