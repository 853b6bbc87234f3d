import type { FIELD_TYPES } from '../../contracts/entities';

/**
 * A custom field's type as the export writes it (reference §4.1): Testmo's numeric `type`
 * (1 Text (String), 2 Text (Long), 3 Integer, 4 Number, 5 Date, 6 Link, 7 Checkbox, 8 Dropdown,
 * 9 Multi-select, 10 Steps), or the same type by name (`type_name`, or a `type` that is a name):
 * "Dropdown", "Text (Long)", "Multi-select"... compared without case, blanks and punctuation.
 */
export type FieldType = (typeof FIELD_TYPES)[number];

const BY_NUMBER: Record<number, FieldType> = {
  1: 'TEXT_STRING', 2: 'TEXT_LONG', 3: 'INTEGER', 4: 'NUMBER', 5: 'DATE', 6: 'LINK', 7: 'CHECKBOX', 8: 'DROPDOWN', 9: 'MULTI_SELECT', 10: 'STEPS',
};

const BY_NAME: Record<string, FieldType> = {
  textstring: 'TEXT_STRING', string: 'TEXT_STRING', text: 'TEXT_STRING', textshort: 'TEXT_STRING',
  textlong: 'TEXT_LONG', longtext: 'TEXT_LONG', textarea: 'TEXT_LONG',
  integer: 'INTEGER', int: 'INTEGER', number: 'NUMBER', decimal: 'NUMBER', float: 'NUMBER',
  date: 'DATE', link: 'LINK', url: 'LINK', checkbox: 'CHECKBOX', boolean: 'CHECKBOX',
  dropdown: 'DROPDOWN', select: 'DROPDOWN', singleselect: 'DROPDOWN',
  multiselect: 'MULTI_SELECT', steps: 'STEPS',
};

/** The field's type, or null when the row names none this import knows (the import then makes a text field, and the analysis warns). */
export function fieldTypeOf(row: Record<string, unknown>): FieldType | null {
  for (const value of [row.type, row.type_name]) {
    const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
    if (Number.isInteger(n) && BY_NUMBER[n]) return BY_NUMBER[n];
    if (typeof value === 'string') {
      const name = value.toLowerCase().replace(/[^a-z]/g, '');
      if (Object.hasOwn(BY_NAME, name)) return BY_NAME[name];
    }
  }
  return null;
}
