#include "measure/part_detector.h"

#include <algorithm>
#include <cmath>

namespace stripeline::measure {

PartDetector::PartDetector(DetectionSettings settings, double row_pitch, std::string units, OnPart on_part)
    : s_(settings), pitch_(row_pitch), units_(std::move(units)), on_part_(std::move(on_part)) {
  reference_.a = s_.reference_z;
  const auto rows = static_cast<std::size_t>(std::ceil(s_.max_length / std::max(pitch_, 1e-9))) + 2;
  part_.rows.reserve(std::min<std::size_t>(rows, 1u << 20));
}

bool PartDetector::is_part_row(const MeasureRow& row) const {
  int n = 0;
  for (std::size_t i = 0; i < row.x.size(); ++i) {
    const double x = row.x[i];
    if (x < s_.x_min || x > s_.x_max) continue;
    if (row.z[i] - reference_.at(x) > s_.threshold && ++n >= s_.min_points) return true;
  }
  return false;
}

void PartDetector::keep(MeasureRow& row) {
  part_.rows.emplace_back();
  std::swap(part_.rows.back(), row);
  if (!spare_.empty()) {
    std::swap(row, spare_.back());
    spare_.pop_back();
  }
  row.clear_points();
}

void PartDetector::start(MeasureRow& row) {
  in_part_ = true;
  part_.rows.clear();
  part_.reference = reference_;
  part_.cut = false;
  last_part_row_ = 0;
  keep(row);
}

void PartDetector::emit(std::size_t rows, bool cut) {
  in_part_ = false;
  // Rows past the part's last part row go back to the pool.
  while (part_.rows.size() > rows) {
    spare_.push_back(std::move(part_.rows.back()));
    part_.rows.pop_back();
  }
  const double length = static_cast<double>(part_.rows.size()) * pitch_;
  if (part_.rows.empty() || (s_.mode == DetectionMode::Continuous && !cut && length + 1e-9 < s_.min_length)) {
    for (auto& r : part_.rows) spare_.push_back(std::move(r));
    part_.rows.clear();
    return;
  }
  Part out;
  out.rows.swap(part_.rows);
  part_.rows.reserve(out.rows.capacity());
  out.id = next_id_++;
  out.reference = part_.reference;
  out.row_pitch = pitch_;
  out.units = units_;
  out.cut = cut;
  Box& b = out.box;
  b.y_min = out.rows.front().y;
  b.y_max = out.rows.back().y;
  bool any = false;
  for (const auto& r : out.rows)
    for (std::size_t i = 0; i < r.x.size(); ++i) {
      const double x = r.x[i], z = r.z[i];
      if (x < s_.x_min || x > s_.x_max || z - out.reference.at(x) <= s_.threshold) continue;
      if (!any) b.x_min = b.x_max = x, b.z_min = b.z_max = z, any = true;
      b.x_min = std::min(b.x_min, x), b.x_max = std::max(b.x_max, x);
      b.z_min = std::min(b.z_min, z), b.z_max = std::max(b.z_max, z);
    }
  on_part_(std::move(out));
}

void PartDetector::learn_belt(const MeasureRow& row) {
  if (s_.reference != ReferenceKind::Belt) return;
  constexpr double kKeep = 0.999;
  sw_ *= kKeep, sx_ *= kKeep, sz_ *= kKeep, sxx_ *= kKeep, sxz_ *= kKeep;
  bool any = false;
  for (std::size_t i = 0; i < row.x.size(); ++i) {
    const double x = row.x[i], z = row.z[i];
    if (x < s_.x_min || x > s_.x_max || std::abs(z - reference_.at(x)) >= s_.threshold) continue;
    sw_ += 1, sx_ += x, sz_ += z, sxx_ += x * x, sxz_ += x * z;
    any = true;
  }
  if (any) ++belt_rows_;
  const double det = sw_ * sxx_ - sx_ * sx_;
  if (belt_rows_ >= 2 && det > 1e-9 * sw_ * sxx_) {
    reference_.b = (sw_ * sxz_ - sx_ * sz_) / det;
    reference_.a = (sz_ - reference_.b * sx_) / sw_;
  }
}

void PartDetector::push(MeasureRow& row) {
  if (s_.mode == DetectionMode::Encoder) {
    const double at = row.y - s_.start;
    const auto slot = static_cast<std::int64_t>(std::floor(at / s_.pitch));
    const bool inside = at >= 0 && at - static_cast<double>(slot) * s_.pitch < s_.length;
    if (in_part_ && (!inside || slot != encoder_slot_)) emit(part_.rows.size(), false);
    if (!inside) return learn_belt(row);
    if (!in_part_) {
      encoder_slot_ = slot;
      start(row);
    } else {
      keep(row);
    }
    return;
  }
  const bool high = is_part_row(row);
  if (!in_part_) {
    if (!high || (s_.mode == DetectionMode::FixedLength && !armed_)) {
      armed_ = armed_ || !high;
      return learn_belt(row);
    }
    start(row);
    return;
  }
  const double y = row.y;
  keep(row);
  if (s_.mode == DetectionMode::FixedLength) {
    if (static_cast<double>(part_.rows.size()) * pitch_ >= s_.length - 1e-9) {
      armed_ = false;
      emit(part_.rows.size(), false);
    }
    return;
  }
  if (high) last_part_row_ = part_.rows.size() - 1;
  if (y - part_.rows[last_part_row_].y >= s_.gap_length - 1e-9)
    emit(last_part_row_ + 1, false);
  else if (static_cast<double>(part_.rows.size()) * pitch_ >= s_.max_length - 1e-9)
    emit(part_.rows.size(), true);
}

void PartDetector::finish() {
  if (in_part_) emit(s_.mode == DetectionMode::Continuous ? last_part_row_ + 1 : part_.rows.size(), false);
}

void PartDetector::recycle(Part&& part) {
  for (auto& r : part.rows) {
    r.clear_points();
    spare_.push_back(std::move(r));
  }
  part.rows.clear();
}

}  // namespace stripeline::measure
