import LocationPolicy
import Testing

/// Issue 12, hole 1: every kind of audited event is bounded per user, and one user's flood costs no
/// other user, nor another kind, anything.
@Suite("Audit budget")
struct AuditBudgetTests {
    static let start = ContinuousClock.now

    /// Admits `count` events of (uid, kind) at `start + offset`; returns how many were recorded.
    static func recorded(_ budget: inout AuditBudget, uid: UInt32, kind: String, count: Int, at offset: Duration = .zero) -> Int {
        (0..<count).filter { _ in budget.admit(uid: uid, kind: kind, now: start + offset) != .omit }.count
    }

    @Test("a flood of one kind by one user is cut at the budget; every other user and kind keeps all of its own",
          arguments: ["decision", "delivery", "question"])
    func floodIsIsolated(kind: String) {
        var budget = AuditBudget(perWindow: 20, window: .seconds(60))
        #expect(Self.recorded(&budget, uid: 1, kind: kind, count: 10_000) == 20)
        // The same user's other kinds, and other users' same kind, are untouched.
        for other in ["decision", "delivery", "question"] where other != kind {
            #expect(Self.recorded(&budget, uid: 1, kind: other, count: 20) == 20)
        }
        #expect(Self.recorded(&budget, uid: 2, kind: kind, count: 20) == 20)
        #expect(Self.recorded(&budget, uid: 0, kind: kind, count: 20) == 20)
        #expect(budget.admit(uid: 2, kind: kind, now: Self.start) == .omit)
    }

    @Test("the next window records again, its first record saying how many were left out",
          arguments: [(perWindow: 20, flood: 25, omitted: 5), (perWindow: 1, flood: 1, omitted: 0), (perWindow: 3, flood: 1000, omitted: 997)])
    func omissionsAreReported(perWindow: Int, flood: Int, omitted: Int) {
        var budget = AuditBudget(perWindow: perWindow, window: .seconds(60))
        #expect(Self.recorded(&budget, uid: 7, kind: "decision", count: flood) == min(flood, perWindow))
        // Still inside the window: left out.
        #expect(budget.admit(uid: 7, kind: "decision", now: Self.start + .seconds(59)) == .omit)
        #expect(budget.admit(uid: 7, kind: "decision", now: Self.start + .seconds(60)) == .record(omittedBefore: omitted + 1))
        #expect(budget.admit(uid: 7, kind: "decision", now: Self.start + .seconds(61)) ==
                (perWindow > 1 ? .record(omittedBefore: 0) : .omit))
    }

    @Test("the pre-kind call counts all of a user's events together, as refusals were")
    func withoutKind() {
        var budget = AuditBudget()
        for _ in 0..<20 { #expect(budget.admit(uid: 65534, now: Self.start) == .record(omittedBefore: 0)) }
        #expect(budget.admit(uid: 65534, now: Self.start) == .omit)
    }

    @Test("what was left out and not yet reported is handed back once, per user and kind (for the shutdown record)")
    func takeOmissions() {
        var budget = AuditBudget(perWindow: 2, window: .seconds(60))
        _ = Self.recorded(&budget, uid: 9, kind: "delivery", count: 5)
        _ = Self.recorded(&budget, uid: 1, kind: "decision", count: 12)
        _ = Self.recorded(&budget, uid: 1, kind: "delivery", count: 2)
        let taken = budget.takeOmissions()
        #expect(taken.map(\.key) == [AuditBudget.Key(uid: 1, kind: "decision"), AuditBudget.Key(uid: 9, kind: "delivery")])
        #expect(taken.map(\.omitted) == [10, 3])
        #expect(budget.takeOmissions().isEmpty)
        // Reported once: the next window's first record owes nothing.
        #expect(budget.admit(uid: 1, kind: "decision", now: Self.start + .seconds(60)) == .record(omittedBefore: 0))
    }
}
