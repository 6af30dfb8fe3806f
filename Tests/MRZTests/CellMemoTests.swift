import ImageCodecs
import MRZSynthesis
import TestSupport
import Testing
@testable import MRZ

/// `CellMemo`: a cell read before in the same photo is not sampled or classified again, and what
/// the memo gives is what reading the cell afresh gives, to the last bit.
@Suite("MRZ reader: cells read once a photo")
struct CellMemoTests {
    /// A scanned page's zone and its cells where the photographer drew them.
    static func zone(_ format: MRZFormat) throws -> (gray: GrayImage, lines: [[CellGeometry.Cell]]) {
        let photographer = try #require(MRZRecognizerTests.photographer, "the OCR-B and DejaVu fonts are needed")
        var generator = SeededGenerator(state: 77 + UInt64(format.lineLength))
        let sample = MRZSample(format: format, generator: &generator)
        let shot = photographer.shoot(sample, .scan, generator: &generator)
        let lines = shot.cellCentres.map { centres in
            let pitch = (centres[centres.count - 1].x - centres[0].x) / Float(centres.count - 1)
            return centres.map { CellGeometry.Cell(x: $0.x, y: $0.y, along: (1, 0), pitch: pitch, capHeight: shot.capHeight) }
        }
        return (GrayImage(shot.frame), lines)
    }

    @Test("a line shifted a cell or two is read from the memo: the same probabilities, only the cells near its ends classified again",
          arguments: MRZFormat.allCases)
    func shiftedLinesReuseTheirCells(format: MRZFormat) throws {
        let recognizer = try #require(MRZRecognizerTests.recognizer)
        let (gray, lines) = try Self.zone(format)
        let memo = CellMemo(raw: CellMemo.Raw())
        for line in lines {
            let fresh = recognizer.cellReadings(gray, line)
            let remembered = recognizer.cellReadings(gray, line, memo: memo)
            #expect(fresh.probabilities == remembered.probabilities && fresh.samples == remembered.samples && fresh.contrast == remembered.contrast)
        }
        let firstPass = memo.classifications
        #expect(firstPass == lines.map(\.count).reduce(0, +))
        for shift in [1, -1, 2, -2] {
            let shifted = CellGeometry(lines: lines).shifted(by: shift)
            let before = memo.classifications
            for line in shifted.lines {
                let fresh = recognizer.cellReadings(gray, line)
                let remembered = recognizer.cellReadings(gray, line, memo: memo)
                #expect(fresh.probabilities == remembered.probabilities && fresh.samples == remembered.samples,
                        "shift \(shift): the memo's reading differs from a fresh one")
            }
            // A cell is classified again only where its neighbours (two either side) changed: the
            // line's ends, and the cells the shift brought in.
            let again = memo.classifications - before
            #expect(again <= shifted.lines.count * 2 * (abs(shift) + 2), "shift \(shift): \(again) cells classified again")
            #expect(again > 0)
        }
        // Read again as they were: nothing classified.
        let settled = memo.classifications
        for line in lines { _ = recognizer.cellReadings(gray, line, memo: memo) }
        #expect(memo.classifications == settled)
    }

    @Test("a cap height chosen again is other cells: classified afresh")
    func anotherCapHeightIsAnotherCell() throws {
        let recognizer = try #require(MRZRecognizerTests.recognizer)
        let (gray, lines) = try Self.zone(.td3)
        let memo = CellMemo(raw: CellMemo.Raw())
        _ = recognizer.cellReadings(gray, lines[1], memo: memo)
        let taller = CellGeometry(lines: lines).scalingCapHeight(by: 1.08).lines[1]
        let before = memo.classifications
        let remembered = recognizer.cellReadings(gray, taller, memo: memo)
        #expect(memo.classifications - before == taller.count)
        #expect(remembered.probabilities == recognizer.cellReadings(gray, taller).probabilities)
    }
}
