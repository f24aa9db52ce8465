// The data side of `ignis train`: reading the chosen data set, pooling its train and test
// files, cutting the pool into train / validation / test parts from the seed (or keeping the
// official test set), and the per-channel mean and std of the training part. Besides the
// named sets: imagefolder:PATH (ImageFolder, images --image-size square, RGB) and csv:PATH
// (read_csv, label in the last column; features become [N, F, 1, 1] "images" of F channels,
// whose per-channel normalisation standardises each feature, for --model mlp only).
#pragma once

#include <ignis/ignis.h>

#include <cstdint>
#include <string>
#include <vector>

#include "options.h"

namespace ignis_cli {

struct TrainData {
  ignis::data::DatasetPtr train, val, test;  ///< val may hold 0 samples
  std::vector<std::string> classes;
  int64_t channels = 0, height = 0, width = 0;
  std::vector<double> mean, std;  ///< per channel, of the training part, on the [0, 1] scale
  std::string data_dir;           ///< where it was read from ("" for synthetic)
  std::string split_note;         ///< how the parts were made, for the log
};

/// --data's check: "" when `spec` names a known data set or is imagefolder:PATH / csv:PATH
/// with a non-empty PATH, else what is wrong.
std::string check_data_spec(const std::string& spec);
/// A name for the data in file names: the set's name, or "imagefolder-<folder>" /
/// "csv-<file stem>" for the path forms.
std::string data_label(const std::string& spec);

/// Parses "a,b,c" (train, validation, test fractions summing to 1) or "official".
/// Throws UsageError with the fix when it is neither.
std::vector<double> parse_split(const std::string& split);

/// Where a named data set's files are when --data-dir is not given (Debian's locations);
/// "" for the path forms and synthetic.
std::string default_data_dir(const std::string& data);
/// The first n samples of a reader's result (all of them when n is 0 or larger).
ignis::data::LabeledImages first_samples(ignis::data::LabeledImages d, int64_t n);

/// Reads and splits the data set the options name; UsageError for a missing directory or a
/// split the data set cannot do.
TrainData load_train_data(const TrainOptions& o);

}  // namespace ignis_cli
