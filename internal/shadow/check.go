package shadow

import (
	"errors"

	"msgx/internal/legacyflop"
)

// Check reports what makes src unusable, as msgx shadow diff words it after its name: each
// side must come from exactly one of a file and a channel, a channel needs For, and the two
// channels must differ.
func (src Sources) Check() error {
	switch {
	case (src.LegacyFile == "") == (src.LegacyChannel == ""):
		return errors.New("give exactly one of --legacy FILE and --legacy-channel CH (the legacy's is " + legacyflop.DefaultChannel + ")")
	case (src.MsgxFile == "") == (src.MsgxChannel == ""):
		return errors.New("give exactly one of --msgx FILE and --msgx-channel CH")
	case (src.LegacyChannel != "" || src.MsgxChannel != "") && src.For <= 0:
		return errors.New("--for DURATION is needed to listen to a channel")
	case src.LegacyChannel != "" && src.LegacyChannel == src.MsgxChannel:
		return errors.New("--legacy-channel and --msgx-channel are the same channel")
	}
	return nil
}
