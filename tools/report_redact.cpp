// SPDX-License-Identifier: Apache-2.0
// placeholder: filled in by the change that adds it
