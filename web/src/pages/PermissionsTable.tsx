import { RadioButton, Text } from '@shopify/polaris';
import type { Level, Permissions, Resource } from '../api';
import { LEVEL_LABEL, LEVELS, RESOURCE_HELP, RESOURCE_LABEL } from './permissions';

/**
 * Resource × level as a table of radio buttons: the key dialog's custom permissions and the consent page's. `max`
 * (consent): a level above it is shown as not asked for, with no button.
 */
export function PermissionsTable({
  id,
  resources,
  value,
  onChange,
  max,
  caption,
  labelledBy,
  describedBy,
}: {
  id: string;
  resources: readonly Resource[];
  value: Permissions;
  onChange: (resource: Resource, level: Level) => void;
  max?: Permissions;
  caption?: string;
  labelledBy?: string;
  describedBy?: string;
}) {
  return (
    <table className="svc-permissions" aria-labelledby={labelledBy} aria-describedby={describedBy}>
      {caption && <caption className="svc-visually-hidden">{caption}</caption>}
      <thead>
        <tr>
          <th scope="col">Resource</th>
          {LEVELS.map((l) => (
            <th scope="col" key={l}>
              {LEVEL_LABEL[l]}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {resources.map((r) => (
          <tr key={r}>
            <th scope="row">
              <Text as="span" fontWeight="semibold">
                {RESOURCE_LABEL[r]}
              </Text>
              <Text as="span" variant="bodySm" tone="subdued" id={`${id}-${r}-help`}>
                {RESOURCE_HELP[r]}
              </Text>
            </th>
            {LEVELS.map((l: Level) => (
              <td key={l}>
                {!max || LEVELS.indexOf(l) <= LEVELS.indexOf(max[r]) ? (
                  <RadioButton
                    id={`${id}-${r}-${l}`}
                    name={`${id}-${r}`}
                    label={`${RESOURCE_LABEL[r]}: ${LEVEL_LABEL[l]}`}
                    labelHidden
                    checked={value[r] === l}
                    onChange={() => onChange(r, l)}
                    ariaDescribedBy={`${id}-${r}-help`}
                  />
                ) : (
                  <Text as="span" tone="subdued">
                    <span aria-label={`${RESOURCE_LABEL[r]}: ${LEVEL_LABEL[l]} not asked for`}>—</span>
                  </Text>
                )}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
